"""The report's figures as inline SVG text (matplotlib's object API, no pyplot, no display).

Text stays text (``svg.fonttype = none``) so the SVG is small, searchable and never needs a font
download; element ids are salted per figure so several SVGs can live in one HTML page.
"""

from __future__ import annotations

import io
import math
import re
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

#: above this many points per group a panel shows only the box (keeps the SVG small)
MAX_POINTS_PER_GROUP = 200
_PASS_COLOR, _FAIL_COLOR = "#2ca02c", "#d62728"
_LEVEL_STYLE = {"pooled": ("o", "#1f77b4"), "per_problem": ("s", "#ff7f0e")}
_REFERENCE_MARKERS = {"pooled": "*", "per_problem": "^", "unspecified": "D"}
_COEFFICIENT_LABELS = {"kendall": "Kendall τ-b", "pearson": "Pearson r"}


def _svg(figure: Figure, salt: str) -> str:
    """Render ``figure`` to SVG markup without the XML prolog (for inline use)."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        FigureCanvasSVG(figure).print_svg(buffer, metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    start = text.find("<svg")
    return text[start:] if start >= 0 else text


def _finite(values: list[Any]) -> np.ndarray:
    array = np.array([v for v in values if isinstance(v, (int, float)) and math.isfinite(v)], dtype=float)
    return array


def _strip(axes, position: float, values: np.ndarray, color: str, rng: np.random.Generator) -> None:
    if len(values) == 0 or len(values) > MAX_POINTS_PER_GROUP:
        return
    jitter = rng.uniform(-0.12, 0.12, size=len(values))
    axes.scatter(position + jitter, values, s=10, color=color, alpha=0.6, linewidths=0, zorder=3)


def distributions_svg(distributions: dict[str, dict[str, Any]]) -> str | None:
    """Box plots of each method's scores on passing vs failing samples, with the points when a group
    has at most :data:`MAX_POINTS_PER_GROUP`, else with a violin (kernel density) behind the box.

    Args:
        distributions: method -> ``{"scope", "passed": [float], "failed": [float]}``.

    Returns:
        SVG markup, or ``None`` when there is nothing to draw.
    """
    methods = [m for m, d in distributions.items() if d.get("passed") or d.get("failed")]
    if not methods:
        return None
    columns = min(4, len(methods))
    rows = math.ceil(len(methods) / columns)
    figure = Figure(figsize=(3.0 * columns, 2.6 * rows), layout="constrained")
    rng = np.random.default_rng(0)
    for index, method in enumerate(methods):
        axes = figure.add_subplot(rows, columns, index + 1)
        groups = [_finite(distributions[method].get("passed", [])), _finite(distributions[method].get("failed", []))]
        present = [(i, g) for i, g in enumerate(groups) if len(g)]
        box = axes.boxplot([g for _, g in present], positions=[i for i, _ in present], widths=0.5,
                           showfliers=False, patch_artist=True)
        for patch, (i, _) in zip(box["boxes"], present):
            patch.set_facecolor((_PASS_COLOR, _FAIL_COLOR)[i])
            patch.set_alpha(0.25)
        for i, group in present:
            _strip(axes, i, group, (_PASS_COLOR, _FAIL_COLOR)[i], rng)
            if len(group) > MAX_POINTS_PER_GROUP and np.ptp(group) > 0:  # too many points: show the density
                violin = axes.violinplot([group], positions=[i], widths=0.8, showextrema=False)
                for body in violin["bodies"]:
                    body.set_facecolor((_PASS_COLOR, _FAIL_COLOR)[i])
                    body.set_alpha(0.2)
        axes.set_xticks([0, 1], [f"pass\nn={len(groups[0])}", f"fail\nn={len(groups[1])}"])
        axes.set_xlim(-0.6, 1.6)
        scale = distributions[method].get("scale")
        if scale and scale[1] > scale[0]:  # the method's declared range, so a constant score is not magnified
            pad = 0.05 * (scale[1] - scale[0])
            axes.set_ylim(scale[0] - pad, scale[1] + pad)
        axes.set_title(f"{method} ({distributions[method].get('scope')})", fontsize=9)
        axes.tick_params(labelsize=8)
    figure.suptitle("Score by execution outcome", fontsize=10)
    return _svg(figure, "distributions")


#: how a reference mark is filled, by its ``kind`` (:func:`workbench.report.references.reference_marks`)
_MARK_FILL = {"published": "black", "recomputed": "none", "same rows": "#7b3294"}
#: the shipped column on an estimate's own rows: shapes of their own (X pooled, P per problem)
_SAME_ROWS_MARKERS = {"pooled": "X", "per_problem": "P"}


def forest_svg(headline: list[dict[str, Any]], confidence: float = 0.95, label_noun: str = "execution") -> str | None:
    """Forest plot: per method and scope, pooled and per-problem Kendall tau-b and Pearson r with
    their bootstrap intervals, and the reference values on the same rows (filled black: published,
    hollow: recomputed from the published data, purple: the shipped column on this estimate's rows).

    Args:
        headline: the report's ``headline`` entries; each scope's marks are its
            ``reference_marks[scope]`` (none for a report without them: a published value is
            never drawn next to an estimate on other rows).
        confidence: the interval level (for the axis label).
        label_noun: what the correlations are with, for the title (``execution``, ``the grade 'grade'``:
            :func:`workbench.report.collect.label_words`).

    Returns:
        SVG markup, or ``None`` when no method has a correlation.
    """
    rows = []  # (label, summary, reference marks)
    for entry in headline:
        for scope in ("subset", "all"):
            summary = entry.get(scope)
            if summary:
                marks = (entry.get("reference_marks") or {}).get(scope) or []
                rows.append((f"{entry['method']} ({scope}, n={summary.get('n_samples')})", summary, marks))
    if not rows:
        return None
    figure = Figure(figsize=(11, 0.42 * len(rows) + 1.8), layout="constrained")
    axes_list = figure.subplots(1, 2, sharey=True)
    positions = np.arange(len(rows))[::-1]
    for axes, coefficient in zip(axes_list, ("kendall", "pearson")):
        for y, (_, summary, references) in zip(positions, rows):
            for offset, level in ((0.15, "pooled"), (-0.15, "per_problem")):
                block = summary.get(level) or {}
                value, ci = block.get(coefficient), block.get(f"{coefficient}_ci") or [None, None]
                if value is None:
                    continue
                marker, color = _LEVEL_STYLE[level]
                low, high = (ci + [None, None])[:2]
                if low is not None and high is not None:
                    axes.plot([low, high], [y + offset] * 2, color=color, linewidth=1.4)
                axes.plot([value], [y + offset], marker=marker, color=color, markersize=5, linestyle="none")
        for y, (_, _, references) in zip(positions, rows):
            for reference in references:
                if reference["coefficient"] != coefficient:
                    continue
                offset = {"pooled": 0.15, "per_problem": -0.15}.get(reference["level"], 0.0)
                kind = reference["kind"]
                marker = (_SAME_ROWS_MARKERS if kind == "same rows" else _REFERENCE_MARKERS).get(reference["level"], "D")
                axes.plot([reference["value"]], [y + offset], marker=marker, markersize=8, linestyle="none",
                          markeredgecolor="black", markerfacecolor=_MARK_FILL[kind])
        axes.axvline(0, color="grey", linewidth=0.8)
        axes.set_xlim(-1.05, 1.05)
        axes.set_xlabel(f"{_COEFFICIENT_LABELS[coefficient]} ({int(round(confidence * 100))}% CI)")
        axes.grid(axis="x", alpha=0.3)
    axes_list[0].set_yticks(positions, [label for label, _, _ in rows], fontsize=8)
    drawn = [mark for _, _, marks in rows for mark in marks]
    kinds = {mark["kind"] for mark in drawn}
    published_levels = {mark["level"] for mark in drawn if mark["kind"] == "published"}
    handles = [
        axes_list[1].plot([], [], marker="o", color=_LEVEL_STYLE["pooled"][1], linestyle="-", label="ours, pooled")[0],
        axes_list[1].plot([], [], marker="s", color=_LEVEL_STYLE["per_problem"][1], linestyle="-", label="ours, per problem")[0],
    ]
    legend = [("pooled" in published_levels, "*", "black", "published, pooled (same rows)"),
              ("per_problem" in published_levels, "^", "black", "published, per problem (same rows)"),
              ("unspecified" in published_levels, "D", "black", "published, level not stated (same rows)"),
              ("recomputed" in kinds, "*", "none", "recomputed from the published data (same rows)"),
              ("same rows" in kinds, "X", _MARK_FILL["same rows"], "shipped column on the same rows, pooled"),
              ("same rows" in kinds, "P", _MARK_FILL["same rows"], "shipped column on the same rows, per problem")]
    for shown, marker, fill, label in legend:
        if shown:
            handles.append(axes_list[1].plot([], [], marker=marker, markerfacecolor=fill, markeredgecolor="black",
                                             color="black", linestyle="none", label=label)[0])
    figure.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    title = f"Correlation with {label_noun}" + (", with reference values on the same rows" if drawn else
                                            " (no reference value was measured on these rows)")
    figure.suptitle(title, fontsize=10)
    return _svg(figure, "forest")


def cost_svg(cost_per_sample: dict[str, list[dict[str, Any]]]) -> str | None:
    """Per LLM method, the tokens and the LLM seconds each sample cost (box plots with points).

    Args:
        cost_per_sample: method -> rows with ``tokens`` and ``llm_seconds``.

    Returns:
        SVG markup, or ``None`` without LLM rows.
    """
    methods = [m for m, rows in cost_per_sample.items() if rows]
    if not methods:
        return None
    figure = Figure(figsize=(10, 2.8), layout="constrained")
    axes_list = figure.subplots(1, 2)
    rng = np.random.default_rng(0)
    for axes, field, title in ((axes_list[0], "tokens", "tokens per sample"),
                               (axes_list[1], "llm_seconds", "LLM seconds per sample")):
        groups = [_finite([r.get(field) for r in cost_per_sample[m]]) for m in methods]
        present = [(i, g) for i, g in enumerate(groups) if len(g)]
        if present:
            axes.boxplot([g for _, g in present], positions=[i for i, _ in present], widths=0.5, showfliers=False)
            for i, group in present:
                _strip(axes, i, group, "#1f77b4", rng)
        axes.set_xticks(range(len(methods)), methods, fontsize=8)
        axes.set_title(title, fontsize=9)
        axes.grid(axis="y", alpha=0.3)
    figure.suptitle("LLM cost per sample (cache hits cost no tokens)", fontsize=10)
    return _svg(figure, "cost")


_SCRIPT_RE = re.compile(r"<\s*/?\s*script", re.IGNORECASE)


def all_plots(data: dict[str, Any]) -> dict[str, str | None]:
    """Render every figure of the report data; returns name -> SVG markup (or ``None``).

    Raises:
        ValueError: a figure contains a ``<script`` tag (never produced by matplotlib; checked
            because the SVG is inserted unescaped).
    """
    confidence = 0.95
    for scope in ("subset", "all"):
        settings = ((data.get("correlation") or {}).get(scope) or {}).get("bootstrap") or {}
        if isinstance(settings.get("confidence"), (int, float)):
            confidence = float(settings["confidence"])
            break
    plots = {
        "distributions": distributions_svg(data.get("distributions") or {}),
        "forest": forest_svg(data.get("headline") or [], confidence, (data.get("label") or {}).get("noun") or "execution"),
        "cost": cost_svg(data.get("cost_per_sample") or {}),
    }
    for name, svg in plots.items():
        if svg is not None and _SCRIPT_RE.search(svg):
            raise ValueError(f"the {name} figure contains a script tag")
    return plots
