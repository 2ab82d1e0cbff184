"""The ``--plot`` figure of ``workbench bias``: each metric's mean per setting with its interval.

One row of panels per analysis (duplication, contamination), one panel per metric; drawn with
matplotlib's object API on an Agg canvas (no pyplot, no display needed).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from workbench.bias.results import Analysis, BiasReport
from workbench.errors import WorkbenchError

#: panels per row
_COLUMNS = 4
_TITLES = {"train_test": "duplication (Allamanis 2019, Table 2)", "single_set": "duplication: all rows vs one per cluster",
           "contamination": "contamination (GPT-3 App. C style)"}


def plot_bias(report: BiasReport, path: str | os.PathLike[str], *, dpi: int = 150) -> Path:
    """Draw the figure of ``report`` and save it.

    Args:
        report: from :func:`workbench.bias.run_bias`.
        path: the image file; the format follows the suffix (``.png``, ``.svg``, ``.pdf``).
        dpi: resolution for raster formats.

    Returns:
        the written path.

    Raises:
        WorkbenchError: the file cannot be written.
    """
    analyses = [a for a in (report.duplication, report.contamination) if a is not None]
    columns = min(_COLUMNS, max(len(a.metrics) for a in analyses))
    # each analysis starts a new row of panels
    rows_of = [math.ceil(len(a.metrics) / columns) for a in analyses]
    figure = Figure(figsize=(3.6 * columns + 0.6, 3.0 * sum(rows_of) + 0.6), layout="constrained")
    FigureCanvasAgg(figure)
    grid = figure.subplots(sum(rows_of), columns, squeeze=False)
    row = 0
    for analysis, count in zip(analyses, rows_of):
        names = list(analysis.metrics)
        for index in range(count * columns):
            axes = grid[row + index // columns][index % columns]
            if index >= len(names):
                axes.set_visible(False)
                continue
            _panel(axes, analysis, names[index])
        row += count
    level = int(round(report.bootstrap["confidence"] * 100))
    figure.suptitle(f"{Path(report.metrics_source).name}: mean per setting, {level}% CI over "
                    f"{report.bootstrap['n_resamples']} {report.bootstrap['unit']} resamples", fontsize=10)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(target, dpi=dpi)
    except (OSError, ValueError) as error:
        raise WorkbenchError(f"cannot write the plot to {target}: {error}") from error
    return target


def _panel(axes, analysis: Analysis, metric: str) -> None:
    result = analysis.metrics[metric]
    names = list(result.settings)
    for x, name in enumerate(names):
        value = result.settings[name]
        if math.isnan(value.value):
            continue
        low = value.value - value.low if not math.isnan(value.low) else 0.0
        high = value.high - value.value if not math.isnan(value.high) else 0.0
        axes.errorbar([x], [value.value], yerr=[[low], [high]], fmt="o", color="#1f77b4", capsize=4)
        axes.annotate(f"n={value.n_rows}", (x, value.value), textcoords="offset points", xytext=(6, -3), fontsize=7)
    axes.set_xticks(range(len(names)), [analysis.setting_label(n).replace(" ", "\n") for n in names], fontsize=7)
    axes.set_xlim(-0.5, len(names) - 0.5)
    delta = result.delta
    title = f"{metric}\n{_TITLES[analysis.kind]}"
    if delta is not None and not math.isnan(delta.value):
        first, second = (analysis.setting_label(name) for name in analysis.delta_between)
        title += f"\nΔ {delta.value:+.1f}% ({first} vs {second})"
    axes.set_title(title, fontsize=8)
    axes.grid(axis="y", alpha=0.3)
