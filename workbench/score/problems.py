"""A problem set that supplies what a generations file lacks: each task's prompt and reference solution.

A file of generations as ``workbench execute`` takes it (``task_id``, ``completion``) has no
reference solution and often no prompt: execute takes the prompt (and the tests) from the problem
set, matched on the task id. ``workbench score --problems humaneval`` does the same for the
judges: where the data has no prompt or reference column, the problem's prompt and its reference
solution (``canonical_solution`` in HumanEval) are used, so one generations file serves both jobs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from workbench.errors import DataError


@dataclass(frozen=True)
class ProblemSet:
    """Where the problems are and which of their columns to read.

    Attributes:
        source: a bundled name (``humaneval``), a data file or folder, or a hub id.
        split: which split (default: the only one, or ``test``).
        task_column: the task id column, matched with the generations' task ids.
        prompt_column / reference_column: the prompt and the reference solution (a body that
            completes the prompt, as HumanEval's ``canonical_solution``).
        offline: never contact the Hugging Face hub.
    """

    source: str
    split: str | None = None
    task_column: str = "task_id"
    prompt_column: str = "prompt"
    reference_column: str = "canonical_solution"
    offline: bool = False


@dataclass(frozen=True)
class ProblemTexts:
    """One task's prompt and reference solution."""

    prompt: str
    reference: str


def load_problem_texts(problems: ProblemSet) -> dict[str, ProblemTexts]:
    """Task id -> its :class:`ProblemTexts`.

    Raises:
        MissingColumnError: a column of ``problems`` is not in the problem set (the message
            names the ``--problem-...`` option that sets it).
        MissingSplitError / DataError: the problem set does not load, has several splits and no
            ``test`` one, or lists a task twice.
    """
    from workbench.data.loading import load_records

    loaded = load_records(problems.source, splits=[problems.split] if problems.split else None,
                          offline=problems.offline)
    if len(loaded.splits) == 1:
        dataset = next(iter(loaded.splits.values()))
    elif "test" in loaded.splits:
        dataset = loaded.splits["test"]
    else:
        raise DataError(f"the problems ({problems.source}) have the splits {', '.join(loaded.splits)}; "
                        f"name one with --problems-split")
    loaded.require_columns({"--problem-task-column": problems.task_column,
                            "--problem-prompt-column": problems.prompt_column,
                            "--problem-reference-column": problems.reference_column})
    texts: dict[str, ProblemTexts] = {}
    for row in dataset:
        task_id = str(row[problems.task_column])
        if task_id in texts:
            raise DataError(f"the problems ({problems.source}) list task {task_id!r} twice")
        texts[task_id] = ProblemTexts(prompt=row[problems.prompt_column] or "",
                                      reference=row[problems.reference_column] or "")
    return texts


def problem_for(texts: dict[str, ProblemTexts], task_id: str, source: str | os.PathLike[str],
                problems: ProblemSet) -> ProblemTexts:
    """The problem of ``task_id``.

    Raises:
        DataError: the problem set has no such task (with examples of its ids).
    """
    try:
        return texts[task_id]
    except KeyError:
        known = ", ".join(list(texts)[:3])
        raise DataError(f"task {task_id!r} of {os.fspath(source)} is not in the problems ({problems.source}: "
                        f"{len(texts)} tasks, e.g. {known}); pass the problem set these generations were made "
                        f"for with --problems, or the task id column with --task-column") from None
