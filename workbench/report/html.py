"""Render the report data (:func:`workbench.report.collect.build_report_data`) as one
self-contained HTML page: inline CSS, inline SVG figures, pygments highlighting with inline
styles, collapsible ``<details>`` views; no script, font or stylesheet is fetched.

Everything from the data is escaped by Jinja2's autoescaping; the only markup inserted raw is
our own: the SVG figures (matplotlib escapes their text) and pygments' output (it escapes the
code it highlights).
"""

from __future__ import annotations

import math
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from workbench.data.samples import id_text
from workbench.formatting import fixed
from workbench.report.plots import all_plots

#: what a sample view's code mark (``code_check.status``, :mod:`workbench.report.data_check`) says
CODE_MARKS = {"edited": "code edited after the run", "missing": "no longer in the data",
              "unverified": "data changed: code unverified"}
#: the pygments style of code blocks and the CSS class they are scoped under
CODE_STYLE, CODE_CLASS = "default", "hl"


def _number(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    if isinstance(value, int):
        return f"{value:,}"
    return fixed(value, digits)


def _shown_id(value: Any, what: str = "task id") -> Any:
    """An id as the page shows it: a missing one (null, NaN, blank: :func:`~workbench.data.samples.id_text`)
    as a muted ``no task id``, as the page marks what a row lacks (``not executed``), never ``None``."""
    if id_text(value) is None:
        return Markup(f'<span class="muted">no {what}</span>')
    return value


def _counted(value: Any, noun: str, plural: str | None = None) -> str:
    """``1 row``, ``3 rows``, ``1,024 rows``: a count with its noun in the right number."""
    return f"{_number(value)} {noun if value == 1 else (plural or noun + 's')}"


def _percent(value: Any) -> str:
    return "n/a" if not isinstance(value, (int, float)) or isinstance(value, bool) else f"{100 * value:.1f}%"


def _code(text: Any, language: str = "python") -> Markup:
    """Highlighted code as markup (pygments escapes ``text``); unknown languages get plain text."""
    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    formatter = HtmlFormatter(cssclass=CODE_CLASS, linenos=False, wrapcode=True)
    return Markup(highlight("" if text is None else str(text), lexer, formatter))


def reference_table(references: list[dict[str, Any]],
                    headline: list[dict[str, Any]] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Group reference values into one row per (method, label, source) with a cell per
    coefficient and level, and number the sources.

    Args:
        references: the report's ``references``.
        headline: the report's ``headline`` (which estimates each value is drawn next to).

    Returns:
        ``(rows, sources)``: rows are ``{"method", "label", "published", "source", "values":
        {"kendall/pooled": v, ...}, "use": [{"scope", "n", "drawn", "note"}]}`` where ``source``
        is a 1-based index into ``sources`` and ``use`` says, per estimate of the method in this
        run, whether the value is drawn next to it (only on the same rows) or why not.
    """
    by_method = {entry.get("method"): entry for entry in headline or []}
    sources: list[str] = []
    rows: dict[tuple, dict[str, Any]] = {}
    for reference in references:
        if reference["source"] not in sources:
            sources.append(reference["source"])
        key = (reference["method"], reference["label"], reference["source"])
        row = rows.get(key)
        if row is None:
            entry = by_method.get(reference["method"]) or {}
            use = []
            for scope in ("subset", "all"):
                if not entry.get(scope):
                    continue
                marks = (entry.get("reference_marks") or {}).get(scope) or []
                drawn = any(m.get("label") == reference["label"] and m.get("kind") in ("published", "recomputed")
                            for m in marks)
                use.append({"scope": scope, "n": entry[scope].get("n_samples"), "drawn": drawn,
                            "note": None if drawn else (entry.get("reference_notes") or {}).get(scope)})
            row = rows[key] = {"method": reference["method"], "label": reference["label"],
                               "published": reference["published"],
                               "source": sources.index(reference["source"]) + 1, "values": {}, "use": use}
        row["values"][f"{reference['coefficient']}/{reference['level']}"] = reference["value"]
    return list(rows.values()), sources


def _environment() -> Environment:
    environment = Environment(
        loader=PackageLoader("workbench.report", "templates"),
        autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(number=_number, counted=_counted, percent=_percent, code=_code, shown_id=_shown_id)
    return environment


def render_html(data: dict[str, Any]) -> str:
    """Render the report data as a self-contained HTML page.

    Args:
        data: the dict of :func:`~workbench.report.collect.build_report_data` (or its JSON,
            read back).

    Returns:
        the HTML document (UTF-8 text).
    """
    template = _environment().get_template("report.html.j2")
    language = data.get("language")
    plots = {name: (Markup(svg) if svg else None) for name, svg in all_plots(data).items()}
    samples = data.get("samples") or []
    return template.render(
        data=data,
        # a sample's id (task:sample) -> the number of its view (its anchor: #sample-N)
        view_anchors={s.get("dedup_id"): index for index, s in enumerate(samples, 1) if isinstance(s, dict)},
        code_marks=CODE_MARKS,
        plots=plots,
        language=language if isinstance(language, str) else "python",
        reference_rows=reference_table(data.get("references") or [], data.get("headline") or []),
        code_css=Markup(HtmlFormatter(style=CODE_STYLE).get_style_defs(f".{CODE_CLASS}")),
    )
