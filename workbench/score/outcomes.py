"""Execution outcomes for the samples to score, from the results file of ``workbench execute``:
each sample's ``passed``, joined on (task id, sample id), so that ``--select stratified`` can pick
one passing and one failing sample per task from generations that carry no label of their own."""

from __future__ import annotations

import os
from collections.abc import Mapping

from workbench.data.samples import SampleKey, row_key
from workbench.errors import DataError
from workbench.execute.status import SANDBOX_ERROR

#: the column the outcomes are carried in (as ``workbench execute`` names it)
OUTCOME_COLUMN = "passed"


def read_outcomes(path: str | os.PathLike[str]) -> dict[SampleKey, int]:
    """Return sample key -> ``passed`` (0 or 1) from an execution-results file.

    Rows whose sandbox failed before the program started (``status`` ``sandbox_error``) give no
    verdict and are left out, so a sample that has only such a row counts as lacking a result.

    Args:
        path: a ``workbench execute`` results file (JSON Lines with ``task_id``, ``sample_id``,
            ``passed``).

    Raises:
        DataError: the file does not exist or is not a results file (every message begins with
            ``--results PATH:``), or it lists a sample twice.
    """
    from workbench.execute.result_file import read_results

    try:
        rows = read_results(path)
    except (DataError, OSError) as error:
        raise DataError(f"--results {path}: {error}") from error
    outcomes: dict[SampleKey, int] = {}
    for row in rows:
        key = row_key(row)
        if key in outcomes:
            raise DataError(f"--results {path}: it lists task {key[0]!r} sample {key[1]!r} twice")
        if row.get("status") == SANDBOX_ERROR:
            continue
        outcomes[key] = int(bool(row["passed"]))
    return outcomes


def missing_verdicts_note(path: str | os.PathLike[str], missing: list[SampleKey], kept: int) -> str:
    """What the run says about samples left out for want of a verdict in the results.

    Args:
        path: the results file.
        missing: the keys of the samples without a verdict, in data order (at least one).
        kept: the samples that have one.

    Raises:
        DataError: ``kept`` is 0: no sample has a verdict, so the ids cannot be the same (the
            message says how they must match).
    """
    task, sample = missing[0]
    if kept == 0:
        raise DataError(
            f"--results {path}: no sample has a result there (the first: task {task!r} sample {sample!r}); the "
            f"results must come from workbench execute over the same data, whose samples it numbers per task in "
            f"file order as score does (or both read --sample-column)")
    return (f"--results {path}: {len(missing)} sample(s) have no verdict there (no row, or status {SANDBOX_ERROR}; "
            f"the first: task {task!r} sample {sample!r}) and were left out; {kept} with one were selected from")
