"""Execution outcomes for the samples to score, from the results file of ``workbench execute``:
each sample's ``passed``, joined on (task id, sample id), so that ``--select stratified`` can pick
one passing and one failing sample per task from generations that carry no label of their own."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.data.samples import SampleKey, row_key
from workbench.errors import DataError
from workbench.execute.status import SANDBOX_ERROR
from workbench.formatting import count
from workbench.option_words import option_named, option_value

if TYPE_CHECKING:
    from workbench.score.base import Sample

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
    try:
        status = os.stat(path)
    except OSError:
        status = None
    if status is None:  # read_results says what is wrong
        return _read_outcomes(os.fspath(path), None, None)
    # one read per version of the file: the selection and the run record's digest both ask
    return dict(_read_outcomes(os.fspath(path), status.st_mtime_ns, status.st_size))


@functools.lru_cache(maxsize=8)
def _read_outcomes(path: str, mtime_ns: int | None, size: int | None) -> dict[SampleKey, int]:
    from workbench.execute.result_file import read_results

    try:
        rows = read_results(path)
    except (DataError, OSError) as error:
        raise DataError(f"{_named(path)}: {error}") from error
    outcomes: dict[SampleKey, int] = {}
    for row in rows:
        key = row_key(row)
        if key in outcomes:
            raise DataError(f"{_named(path)}: it lists task {key[0]!r} sample {key[1]!r} twice")
        if row.get("status") == SANDBOX_ERROR:
            continue
        outcomes[key] = int(bool(row["passed"]))
    return outcomes


def other_source_note(path: str | os.PathLike[str], source: str | os.PathLike[str]) -> str | None:
    """A sentence when the results' summary (``results.summary.json``) says they were executed
    from other data than ``source``: numbered sample ids then pair a sample with whatever sample
    had its task and number there (a copy of the data with more columns is fine; a reordered
    one is not), or ``None`` (same data, or nothing to compare: no summary, or results of a
    ``workbench run`` folder copied out of it, whose summary names its data ``<run folder>/...``)."""
    from workbench.execute.result_file import summary_path
    from workbench.resume_guard import RUN_FOLDER, SOURCE_KEY, folder_holding, resolved_path, source_identity
    from workbench.run_layout import RunLayout

    try:
        executed_from = json.loads(summary_path(path).read_text(encoding="utf-8"))["settings"][SOURCE_KEY]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    # the execute stage of workbench run records data inside its run folder relative to it
    # (<run folder>/data.jsonl): the folder its results are in now
    executed_from = resolved_path(executed_from, folder_holding(Path(path).resolve(), RunLayout.EXECUTE_RESULTS))
    if isinstance(executed_from, str) and executed_from.startswith(RUN_FOLDER):
        return None  # results copied out of their run folder: which data that was cannot be told
    if isinstance(executed_from, str) and os.path.exists(executed_from):
        executed_from = source_identity(executed_from)
    scored = source_identity(source)
    if executed_from == scored:
        return None
    return (f"{_named(path)}: its run executed {executed_from}, not the data scored here ({scored}); each sample "
            f"took the outcome of the sample with its task and sample id there, which is right only if both files "
            f"hold the same samples in the same order within each task (or carry the same "
            f"{option_named('sample_column')})")


def outcomes_digest(outcomes: Mapping[SampleKey, int]) -> str:
    """A short fingerprint of the verdicts (sorted ``task, sample, passed``), recorded by a
    scoring run so that a resume after the results changed (more samples executed, a rerun) is
    refused: the stratified selection would no longer be the same."""
    text = "\n".join(f"{task}\t{sample}\t{passed}" for (task, sample), passed in sorted(outcomes.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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
            f"{_named(path)}: no sample has a result there (the first: task {task!r} sample {sample!r}); the "
            f"results must come from workbench execute over the same data, whose samples it numbers per task in "
            f"file order as score does (or both read {option_named('sample_column')})")
    return (f"{_named(path)}: {count(len(missing), 'sample')} {'has' if len(missing) == 1 else 'have'} no verdict "
            f"there (no row, or status {SANDBOX_ERROR}; the first: task {task!r} sample {sample!r}) and "
            f"{'was' if len(missing) == 1 else 'were'} left out; {kept} with one {'was' if kept == 1 else 'were'} selected from")


def refuse_other_code(samples: Sequence[Sample], path: str | os.PathLike[str], source: str | os.PathLike[str],
                      ) -> None:
    """Refuse results whose rows record another ``code_sha256`` than the samples to score (the
    verdicts on another model's generations of the same ids), as ``workbench correlate
    --results`` refuses them and in its words
    (:func:`workbench.correlate.inputs.drop_other_code`). A row or sample without a digest
    (an older file, a null generation's row) is not compared; results run with
    ``--prompt-column``, whose digests also cover the prompt, are not compared at all.

    Args:
        samples: the samples as scored (after ``--stop`` cut them): ``key`` and ``code_digest``.
        path: the ``--results`` file; source: the generations, as the user named them.

    Raises:
        DataError: some sample's verdict is of other code.
    """
    import datasets

    from workbench.correlate.analysis import results_digests_comparable
    from workbench.correlate.inputs import CODE_DIGEST_COLUMN, drop_other_code
    from workbench.execute.result_file import read_results

    if not results_digests_comparable(path):
        return
    try:
        digests = {row_key(row): row.get(CODE_DIGEST_COLUMN) for row in read_results(path)
                   if row.get("status") != SANDBOX_ERROR}
    except (DataError, OSError):
        return  # read_outcomes has said what is wrong with the file
    joined = [sample for sample in samples if sample.key in digests]
    if not joined:
        return
    scores = datasets.Dataset.from_dict({CODE_DIGEST_COLUMN: [sample.code_digest for sample in joined]})
    results = datasets.Dataset.from_dict({CODE_DIGEST_COLUMN: [digests[sample.key] for sample in joined]})
    rows = list(range(len(joined)))
    drop_other_code(scores, results, rows, rows, [sample.key for sample in joined],
                    (f"the generations ({source})", _named(path)), False, True, partial_option=None)


def _named(path: str | os.PathLike[str]) -> str:
    """The results file as a message names it: ``--results PATH`` (``[score] results = "PATH"``
    where a run config set it, ``the execute stage's results PATH`` where the run did;
    :func:`workbench.option_words.option_value`)."""
    return option_value("results", os.fspath(path))
