"""The result objects of a bias analysis and their JSON form (``workbench bias --json``)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from workbench.bias.intervals import Interval, SettingDifference
from workbench.bias.settings import SETTING_TEXTS, Decomposition
from workbench.errors import WorkbenchError
from workbench.io import atomic_write


@dataclass
class MetricBias:
    """One metric in every setting of one analysis.

    Attributes:
        metric: the column.
        settings: setting name -> the mean over its rows, with interval and counts.
        delta: the relative difference in percent between the analysis's biased and unbiased
            settings (``delta_between``), with a paired interval.
        decomposition: Eq. 2 of Allamanis 2019 (duplication analyses only).
        correlation: setting name -> Kendall tau-b of the metric with the label (with ``--label``).
        missing: rows without a value for this metric (left out of every setting).
        task_means: setting name -> the mean over tasks of each task's mean (with a task column;
            pass@1 as a mean over problems).
        unmeasured: why Eq. 2 (and the Δ) could not be measured, e.g. no row the dedup removed
            has a value (``decomposition`` is then ``None``); ``None`` when they were.
        correlation_differences: with ``--label``, the tau-b of one setting minus another's
            (:data:`~workbench.bias.settings.COMPARED_SETTINGS`), each a
            :class:`~workbench.bias.intervals.SettingDifference` with its interval and p-value,
            paired where the settings share units.
    """

    metric: str
    settings: dict[str, Interval]
    delta: Interval | None = None
    decomposition: Decomposition | None = None
    correlation: dict[str, Interval] = field(default_factory=dict)
    missing: int = 0
    task_means: dict[str, Interval] = field(default_factory=dict)
    unmeasured: str | None = None
    correlation_differences: list[SettingDifference] = field(default_factory=list)

    def to_dict(self) -> dict:
        out: dict = {"settings": {name: value.to_dict() for name, value in self.settings.items()},
                     "missing_values": self.missing}
        if self.task_means:
            out["task_means"] = {name: value.to_dict() for name, value in self.task_means.items()}
        if self.delta is not None:
            out["delta_percent"] = self.delta.to_dict()
        if self.decomposition is not None:
            out["eq2"] = self.decomposition.to_dict()
        if self.unmeasured:
            out["not_measured"] = self.unmeasured
        if self.correlation:
            out["kendall_tau_b_with_label"] = {name: value.to_dict() for name, value in self.correlation.items()}
        if self.correlation_differences:
            out["kendall_tau_b_differences"] = [d.to_dict() for d in self.correlation_differences]
        return out


@dataclass
class Analysis:
    """One family of settings over the joined rows.

    Attributes:
        kind: ``train_test`` (Allamanis 2019, Table 2), ``single_set`` (all rows vs one per
            cluster) or ``contamination`` (clean vs contaminated rows, GPT-3 App. C).
        settings: the setting names, in report order.
        delta_between: ``(biased, unbiased)`` settings whose relative difference is :attr:`MetricBias.delta`.
        metrics: metric -> its values.
        counts: rows behind the analysis (``joined``, ``test_rows``, ``clusters``, ``contaminated_rows`` ...).
        notes: what a reader must know (rows of other splits left out, the setting that cannot be computed).
        ids: listed ids (``contaminated``: the contaminated row ids).
    """

    kind: str
    settings: tuple[str, ...]
    delta_between: tuple[str, str]
    metrics: dict[str, MetricBias]
    counts: dict[str, int | str | None]
    notes: list[str] = field(default_factory=list)
    ids: dict[str, list[str]] = field(default_factory=dict)

    def _definition(self, name: str) -> str:
        """What setting ``name`` counts; a contamination split over a train/test corpus's test rows says so."""
        if self.kind == "contamination" and self.counts.get("rows") == "test":
            return f"{SETTING_TEXTS[name]}, of the test split (the rows of the duplication settings)"
        return SETTING_TEXTS[name]

    def setting_label(self, name: str) -> str:
        """How the figure and the table name setting ``name`` (``"all_rows"`` -> ``"all rows"``):
        a contamination split over a train/test corpus's test rows calls its ``all_rows``
        ``"test rows"`` (those are the rows it counts, not the train rows)."""
        if name == "all_rows" and self.kind == "contamination" and self.counts.get("rows") == "test":
            return "test rows"
        return name.replace("_", " ")

    def to_dict(self) -> dict:
        metrics = {name: value.to_dict() for name, value in self.metrics.items()}
        rows = "test rows" if self.kind == "train_test" else "rows"
        for block in metrics.values():
            if "eq2" in block:
                # the d of the dedup report is over the compared rows only: say which rows this one is over
                block["eq2"]["d_over"] = (f"all {block['eq2']['n_D']} {rows} with a value of the metric (D), not only "
                                          f"the rows long enough to compare (the dedup report's d)")
        return {
            "kind": self.kind, "settings": list(self.settings),
            "definitions": {name: self._definition(name) for name in self.settings},
            "delta_percent_between": list(self.delta_between), "counts": self.counts, "notes": self.notes,
            "metrics": metrics, **self.ids,
        }


@dataclass
class JoinCounts:
    """How the metric rows joined the dedup output's rows.

    Attributes:
        metric_rows: rows of the metric table; without_id: rows with an empty id cell.
        joined: rows whose id the dedup output has.
        unjoined: rows whose id it does not have (left out); unjoined_ids: the first of them.
        dedup_rows: rows of the dedup run; dedup_rows_without_metric: how many have no metric row.
        id_columns: the id column(s).
        rows_counted: the rows the settings count: ``"test"`` (a train/test corpus's test split) or ``"all"``.
        dedup_rows_counted: the dedup run's rows of that kind (its test split's, or all);
            dedup_rows_counted_without_metric: how many of them have no metric row (the warning's count).
    """

    metric_rows: int
    without_id: int
    joined: int
    unjoined: int
    unjoined_ids: list[str]
    dedup_rows: int
    dedup_rows_without_metric: int
    id_columns: list[str]
    rows_counted: str = "all"
    dedup_rows_counted: int = 0
    dedup_rows_counted_without_metric: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class BiasReport:
    """Everything ``workbench bias`` reports.

    Attributes:
        dedup_output: the dedup output folder; metrics_source: the metric table.
        join: :class:`JoinCounts`.
        duplication: the train/test or single-set analysis (``None`` when the output has no rows to compare).
        contamination: the clean vs contaminated analysis (``None`` without ``--against``).
        bootstrap: how the intervals were made (unit ``task`` or ``cluster``).
        label: the label column of the correlations, if any.
        warnings: what weakens the numbers or needs the user.
        notes: expected outcomes of the inputs' settings (the metric table's own label column that
            differs from the results' on some rows): information, not faults.
        label_kind: with a label, ``"outcome"`` (0/1 or a pass ratio) or ``"graded"`` (a grade
            such as human grades 0-4); ``None`` without one.
    """

    dedup_output: str
    metrics_source: str
    join: JoinCounts
    duplication: Analysis | None
    contamination: Analysis | None
    bootstrap: dict
    label: str | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    label_kind: str | None = None

    def to_dict(self) -> dict:
        return {
            "dedup_output": self.dedup_output, "metrics_source": self.metrics_source, "join": self.join.to_dict(),
            "bootstrap": self.bootstrap, "label": self.label, "label_kind": self.label_kind,
            "duplication": self.duplication.to_dict() if self.duplication else None,
            "contamination": self.contamination.to_dict() if self.contamination else None,
            "warnings": self.warnings, "notes": self.notes,
            "source": "Allamanis 2019 (Onward!), Sec. 2 Eq. 2 and Table 2-3; Brown et al. 2020 (GPT-3), App. C",
        }

    def write_json(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_dict` as JSON to ``path`` (atomically); returns the path.

        Raises:
            WorkbenchError: the file cannot be written.
        """
        target = Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, json.dumps(self.to_dict(), indent=2, allow_nan=False))
        except OSError as error:
            raise WorkbenchError(f"cannot write the JSON report to {target}: {error}") from error
        return target
