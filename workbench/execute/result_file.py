"""Execution result rows: the jsonl file ``workbench correlate`` joins on
``task_id`` + ``sample_id``, written one row at a time so an interrupted run resumes."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable, KeysView, Mapping
from pathlib import Path
from typing import Any

from workbench.data.samples import SampleKey, row_key
from workbench.errors import DataError
from workbench.execute.pass_at_k import outcomes_per_task
from workbench.formatting import count
from workbench.io import JsonlWriter, read_jsonl

#: the columns of a result row, in order (``correlate`` needs the first three)
RESULT_COLUMNS: tuple[str, ...] = (
    "task_id", "sample_id", "passed", "status", "duration_s", "timeout_s", "build_s", "peak_rss_mib",
    "exit_code", "signal", "detail", "stderr_tail", "language", "isolation",
    "generation_truncated", "stop_sequence", "code_sha256", "attempts", "flaky",
)

#: how pass@k (and ``passed``, ``status``) treat a sample run several times (``--repeat``): its
#: first attempt counts, so a repeated run's pass@k is what a single run records
FLAKY_RULE = "first attempt"

#: how many flaky samples a summary names
FLAKY_LISTED = 20


def _check_result_row(path: Path) -> Callable[[dict[str, Any], int], None]:
    def check(row: dict[str, Any], number: int) -> None:
        if not {"task_id", "sample_id", "passed"} <= row.keys():
            raise DataError(f"{path}, line {number}: a result row needs task_id, sample_id and passed")

    return check


def read_results(path: str | os.PathLike[str], *, allow_torn_tail: bool = True) -> list[dict[str, Any]]:
    """Read a results file (:func:`workbench.io.read_jsonl`: a torn last line is not a row).

    Args:
        path: the jsonl file.
        allow_torn_tail: skip a last line without its newline (what a killed run leaves); when
            False it is read like any other line, and a bad one is an error.

    Raises:
        DataError: a row that is not JSON, or lacks ``task_id``/``sample_id``/``passed``.
    """
    return read_jsonl(path, allow_torn_tail=allow_torn_tail, check=_check_result_row(Path(path)))


class ResultWriter:
    """Appends result rows to a jsonl file with :class:`workbench.io.JsonlWriter` (each row
    synced to disk before :meth:`write` returns, so a crash loses nothing finished).

    Args:
        path: the output file.
        resume: keep the rows already there (a torn last line is cut off first);
            otherwise the file must not exist yet unless ``overwrite``.
        overwrite: replace an existing file.

    Attributes:
        finished: the keys (:func:`workbench.data.samples.sample_key`) of the rows in the file.
        code_digests: key -> the ``code_sha256`` of the row already in the file (``None`` in a
            file of an older version).

    Raises:
        DataError: the file exists and neither ``resume`` nor ``overwrite`` is set, or
            ``path`` is a folder (``--overwrite`` replaces files, never folders), or, with
            ``resume``, the file is not a results file of ``workbench execute`` (a row without
            ``task_id``/``sample_id``/``passed``/``status``; it is then left as it was).
    """

    def __init__(self, path: str | os.PathLike[str], *, resume: bool = False, overwrite: bool = False):
        self.path = Path(path)
        if self.path.is_dir():
            raise DataError(
                f"{self.path} is a folder; --output takes a results file, e.g. {self.path / 'results.jsonl'}"
            )
        mode = "resume" if resume else "overwrite" if overwrite else "new"
        self._writer = JsonlWriter(self.path, mode, check=_check_result_row(self.path))
        if resume:
            # a table with the join columns alone (another tool's, or a score file) must not be
            # adopted as finished samples that never ran
            foreign = sum("status" not in row for row in self._writer.rows)
            if foreign:
                self._writer.close()
                raise DataError(
                    f"cannot resume: {foreign} of the {count(len(self._writer.rows), 'row')} of {self.path} "
                    f"{'has' if foreign == 1 else 'have'} no 'status' "
                    f"column, so it was not written by `workbench execute`; write to a new --output, or pass "
                    f"--overwrite to replace it"
                )
        self.code_digests: dict[SampleKey, str | None] = {row_key(r): r.get("code_sha256") for r in self._writer.rows}
        #: key -> how many attempts the row already in the file records (1 for a row without ``attempts``,
        #: written before ``--repeat`` existed)
        self.attempt_counts: dict[SampleKey, int] = {row_key(r): attempt_count(r) for r in self._writer.rows}

    @property
    def finished(self) -> KeysView[SampleKey]:
        """The keys of the rows in the file (those of :attr:`code_digests`)."""
        return self.code_digests.keys()

    def write(self, row: Mapping[str, Any]) -> None:
        """Append one row (columns in :data:`RESULT_COLUMNS` order, extras after)."""
        ordered = {column: row[column] for column in RESULT_COLUMNS if column in row}
        ordered.update({k: v for k, v in row.items() if k not in ordered})
        self._writer.write(ordered)
        self.code_digests[row_key(row)] = row.get("code_sha256")
        self.attempt_counts[row_key(row)] = attempt_count(row)

    def close(self) -> None:
        """Close the file (every row is already on disk)."""
        self._writer.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def pass_at_1(rows: Iterable[Mapping[str, Any]]) -> float | None:
    """Return pass@1: the mean over tasks of each task's fraction of passing samples
    (the unbiased estimator of Chen et al. 2021, Sec. 2.1, with k = 1). ``None`` for no rows.

    Raises:
        DataError: a ``passed`` that is not 0/1 or a bool (:func:`~workbench.execute.pass_at_k.verdict`).
    """
    per_task = outcomes_per_task(rows)
    if not per_task:
        return None
    return sum(c / n for n, c in per_task.values()) / len(per_task)


def attempt_count(row: Mapping[str, Any]) -> int:
    """How many times the row's sample was run: the length of its ``attempts`` list, 1 for a row
    without one (written before ``--repeat`` existed, each sample once)."""
    attempts = row.get("attempts")
    return len(attempts) if isinstance(attempts, list) and attempts else 1


def flaky_summary(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The samples of a results file whose attempts (``--repeat``) did not all end alike.

    Args:
        rows: result rows; a row with one attempt (or none recorded) is not tested, so never flaky.

    Returns:
        ``{"repeated", "samples", "pass_flips", "tasks", "rule", "pass_at_1_flaky_failed",
        "pass_at_1_flaky_passed", "flaky_samples"}``: the rows run more than once, those whose
        attempts' statuses differ (``flaky``), those of them that passed on some attempts only
        (``pass_flips``: the ones that can move pass@k), the tasks with a flaky sample, the rule
        pass@k uses for them (:data:`FLAKY_RULE`), pass@1 over all rows with each pass-flipping
        sample counted as failed and as passed (the range its flakiness spans; ``None`` without
        rows), and up to :data:`FLAKY_LISTED` of them as ``"task_id sample_id: passed, failed, passed"``.
    """
    rows = list(rows)
    repeated = [row for row in rows if attempt_count(row) > 1]
    flaky = [row for row in repeated if len(set(row["attempts"])) > 1]
    flips = [row for row in flaky if "passed" in row["attempts"]]
    flipped = {id(row) for row in flips}

    def pass_at_1_with(passed: int) -> float | None:
        return pass_at_1({**row, "passed": passed} if id(row) in flipped else row for row in rows)

    return {
        "repeated": len(repeated), "samples": len(flaky), "pass_flips": len(flips),
        "tasks": len({str(row.get("task_id")) for row in flaky}), "rule": FLAKY_RULE,
        "pass_at_1_flaky_failed": pass_at_1_with(0), "pass_at_1_flaky_passed": pass_at_1_with(1),
        "flaky_samples": [f"{row.get('task_id')} {row.get('sample_id')}: {', '.join(map(str, row['attempts']))}"
                          for row in flaky[:FLAKY_LISTED]],
    }


def status_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Return status -> number of rows, most frequent first."""
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        counts[str(row.get("status", "?"))] += 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


#: how many of the samples that came near the memory limit a summary names
NEAR_LIMIT_LISTED = 20


def memory_summary(rows: Iterable[Mapping[str, Any]], limit_bytes: int | None) -> dict[str, Any]:
    """The peak resident memory of a results file's samples (column ``peak_rss_mib``, MiB).

    Args:
        rows: result rows; a row without the column (written before it existed) or with
            ``null`` there (not measured) counts as ``unmeasured``.
        limit_bytes: the address-space limit the samples ran under (``--memory-mb`` as applied,
            or the runner's own ``RunSpec.limit_overrides`` value), or ``None`` when they ran
            without one (then no sample is counted near it).

    Returns:
        ``{"measured", "unmeasured", "median_peak_rss_mib", "max_peak_rss_mib", "limit_mib",
        "near_limit", "near_limit_samples"}``: the median and largest peak (``None`` with none
        measured), and the samples whose peak reached
        :data:`~workbench.execute.status.NEAR_MEMORY_SHARE` of the limit (their count, and up
        to :data:`NEAR_LIMIT_LISTED` as ``"task_id sample_id: N MiB"``, largest first).
    """
    import statistics

    from workbench.execute.status import NEAR_MEMORY_SHARE

    peaks: list[tuple[float, Mapping[str, Any]]] = []
    unmeasured = 0
    for row in rows:
        value = row.get("peak_rss_mib")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            peaks.append((float(value), row))
        else:
            unmeasured += 1
    limit_mib = None if limit_bytes is None else limit_bytes / (1 << 20)
    near = sorted(((peak, row) for peak, row in peaks if limit_mib and peak >= NEAR_MEMORY_SHARE * limit_mib),
                  key=lambda pair: -pair[0])
    values = [peak for peak, _ in peaks]
    return {
        "measured": len(values), "unmeasured": unmeasured,
        "median_peak_rss_mib": round(statistics.median(values), 1) if values else None,
        "max_peak_rss_mib": max(values) if values else None,
        "limit_mib": limit_mib, "near_limit": len(near),
        "near_limit_samples": [f"{row.get('task_id')} {row.get('sample_id')}: {peak:g} MiB"
                               for peak, row in near[:NEAR_LIMIT_LISTED]],
    }


def summary_path(output: str | os.PathLike[str]) -> Path:
    """Where the summary of the run that wrote ``output`` goes: ``results.jsonl`` ->
    ``results.summary.json`` (isolation, applied limits, counts, notes, failure verdict)."""
    path = Path(output)
    return path.with_name(f"{path.stem}.summary.json")
