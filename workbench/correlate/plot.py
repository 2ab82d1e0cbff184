"""The ``--plot`` figure of ``workbench correlate``: a forest plot of every coefficient with its
bootstrap interval, and each metric's distribution on passing vs failing samples (or at each grade
of a graded label).

Drawn with matplotlib's object API on an Agg canvas (no pyplot, no display needed).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from workbench.errors import WorkbenchError
from workbench.correlate.results import CorrelationReport

_COEFFICIENT_LABELS = {"kendall": "Kendall τ-b", "spearman": "Spearman ρ", "pearson": "Pearson r"}
_LEVEL_STYLE = {"pooled": ("o", "#1f77b4"), "per_problem": ("s", "#d62728")}
_PANEL_COLUMNS = 3


#: the format of a ``--plot`` path without a suffix (``out/figure`` is written as ``out/figure.png``)
DEFAULT_FORMAT = "png"


def figure_path(path: str | os.PathLike[str]) -> Path:
    """The file :func:`plot_report` writes for ``path``: ``path`` itself, or with ``.png``
    added when it has no suffix (as matplotlib would add it, so the CLI names the real file)."""
    path = Path(path)
    return path if path.suffix else path.with_name(f"{path.name}.{DEFAULT_FORMAT}")


def plot_report(report: CorrelationReport, path: str | os.PathLike[str], *, dpi: int = 150) -> Path:
    """Draw the report's figure and save it.

    Top: one forest plot per coefficient (Kendall, Spearman, Pearson), a row per metric, pooled
    and per-problem estimates with their task-bootstrap intervals. Below: per metric, the score
    distribution of passing and failing samples (0/1 labels; box plots with the points) or the
    score against the pass ratio (ratio labels). A graded label (``label_kind="graded"``) gets a
    box plot of the scores at each grade when it has at most 12 distinct grades, else the scores
    against the grade.

    Args:
        report: a report from :func:`workbench.correlate.correlate` (with its ``table``).
        path: the image file; the format follows the suffix (``.png``, ``.svg``, ``.pdf``);
            without one, ``.png`` is added (:func:`figure_path`).
        dpi: resolution for raster formats.

    Returns:
        the written path.

    Raises:
        WorkbenchError: the report has no data table, or the file cannot be written.
    """
    if report.table is None:
        raise WorkbenchError("this report carries no data table to plot (build it with workbench.correlate.correlate)")
    names = list(report.metrics)
    panel_rows = math.ceil(len(names) / _PANEL_COLUMNS)
    forest_height = 0.45 * len(names) + 1.6
    figure = Figure(figsize=(13, forest_height + 3.0 * panel_rows), layout="constrained")
    FigureCanvasAgg(figure)
    top, bottom = figure.subfigures(2, 1, height_ratios=[forest_height, 3.0 * panel_rows])
    _forest(top, report, names)
    _distributions(bottom, report, names, panel_rows)
    settings = report.bootstrap
    figure.suptitle(
        f"{Path(report.source.split(' + ')[0]).name}: metric vs {report.label!r} — {report.counts.samples} samples, "
        f"{report.counts.tasks} tasks; {int(settings.confidence * 100)}% CI from "
        f"{settings.n_resamples} task resamples (seed {settings.seed})",
        fontsize=11,
    )
    path = figure_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=dpi)
    except (OSError, ValueError) as error:
        raise WorkbenchError(f"cannot write the plot to {path}: {error}") from error
    return path


def _forest(subfigure, report: CorrelationReport, names: list[str]) -> None:
    axes = subfigure.subplots(1, 3, sharey=True)
    positions = np.arange(len(names))[::-1]
    for ax, coefficient in zip(axes, ("kendall", "spearman", "pearson")):
        for offset, level in ((0.15, "pooled"), (-0.15, "per_problem")):
            marker, color = _LEVEL_STYLE[level]
            values, lows, highs = [], [], []
            for name in names:
                estimate = getattr(report.metrics[name], level)[coefficient]
                values.append(estimate.value)
                lows.append(estimate.ci[0])
                highs.append(estimate.ci[1])
            values, lows, highs = (np.asarray(v, dtype=float) for v in (values, lows, highs))
            # a percentile bootstrap interval need not contain the point estimate (few tasks,
            # skewed resamples); matplotlib refuses negative error lengths, so clip them to 0
            errors = np.clip(np.vstack([values - lows, highs - values]), 0.0, None)
            ax.errorbar(
                values, positions + offset, xerr=np.nan_to_num(errors), fmt=marker, color=color,
                capsize=3, label="pooled" if level == "pooled" else "per-problem (mean over tasks)",
            )
        ax.axvline(0.0, color="0.6", linewidth=0.8)
        ax.set_title(_COEFFICIENT_LABELS[coefficient])
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(positions, names)
    handles, labels = axes[0].get_legend_handles_labels()
    subfigure.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=9)


def _distributions(subfigure, report: CorrelationReport, names: list[str], panel_rows: int) -> None:
    table = report.table
    axes = np.atleast_1d(subfigure.subplots(panel_rows, _PANEL_COLUMNS, squeeze=False)).ravel()
    rng = np.random.default_rng(0)  # jitter only; fixed so the figure is reproducible
    for ax, name in zip(axes, names):
        values = table.metrics[name]
        valid = ~np.isnan(values)
        x, y = values[valid], table.label[valid]
        pooled = report.metrics[name].pooled["kendall"].value
        if table.binary_label:
            groups = [x[y == 0.0], x[y == 1.0]]
            labels = [f"fail (n={len(groups[0])})", f"pass (n={len(groups[1])})"]
            present = [i for i, g in enumerate(groups) if len(g)]
            ax.boxplot([groups[i] for i in present], positions=[i + 1 for i in present], widths=0.5, showfliers=False)
            # discrete scores (e.g. a 0-4 judge) get a little vertical jitter so their mass shows
            levels = np.unique(x)
            spread = 0.12 * float(np.min(np.diff(levels))) if 1 < len(levels) <= 12 else 0.0
            for i in present:
                jitter = rng.uniform(-0.18, 0.18, len(groups[i]))
                lift = rng.uniform(-spread, spread, len(groups[i]))
                ax.scatter(i + 1 + jitter, groups[i] + lift, s=3, alpha=0.25, color=("#d62728", "#2ca02c")[i])
            ax.set_xticks([1, 2], labels)
        elif table.graded_label and len(grades := np.unique(y)) <= 12:
            width = 0.6 * float(np.min(np.diff(grades))) if len(grades) > 1 else 0.6
            ax.boxplot([x[y == g] for g in grades], positions=list(grades), widths=width, showfliers=False)
            ax.scatter(y + rng.uniform(-width / 3, width / 3, len(y)), x, s=3, alpha=0.2)
            ax.set_xticks(list(grades), [f"{g:g}" for g in grades])
            ax.set_xlabel(report.label if report.label == "grade" else f"{report.label} (grade)")
        else:
            spread = 0.01 * (float(np.ptp(y)) or 1.0)
            ax.scatter(y + rng.uniform(-spread, spread, len(y)), x, s=4, alpha=0.3)
            ax.set_xlabel(f"{report.label} ({'grade' if table.graded_label else 'pass ratio'})")
        ax.set_title(f"{name}  (pooled τ-b = {pooled:.3f})", fontsize=10)
        ax.set_ylabel("score")
    for ax in axes[len(names):]:
        ax.set_visible(False)
