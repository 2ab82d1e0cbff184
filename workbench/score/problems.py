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
from workbench.formatting import count
from workbench.option_words import option_named, option_value


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


def load_problem_texts(problems: ProblemSet, *, prompt: bool = True, reference: bool = True) -> dict[str, ProblemTexts]:
    """Task id -> its :class:`ProblemTexts`.

    Args:
        problems: the problem set.
        prompt / reference: whether its prompt / reference column is read (a column that is
            not read need not exist; its text is then empty).

    Raises:
        DataError: the problem set does not load, lacks a column it is read from (the message
            names the ``--problem-...`` option that sets it), has a split other than the one asked
            for, several splits and no ``test`` one, or lists a task twice; every message begins
            with ``--problems SOURCE:`` so it is not taken for the generations' own.
    """
    from workbench.data.loading import load_records

    try:
        loaded = load_records(problems.source, splits=[problems.split] if problems.split else None,
                              offline=problems.offline)
        dataset = loaded.one_split(option_named("problems_split"))
        loaded.require_columns({option_named("problem_task_column"): problems.task_column,
                                option_named("problem_prompt_column"): problems.prompt_column if prompt else None,
                                option_named("problem_reference_column"): problems.reference_column if reference
                                else None})
    except DataError as error:
        raise DataError(f"{option_value('problems', problems.source)}: "
                        f"{_without_prefix(str(error), problems.source)}") from error
    texts: dict[str, ProblemTexts] = {}
    for row in dataset:
        task_id = str(row[problems.task_column])
        if task_id in texts:
            raise DataError(f"{option_value('problems', problems.source)}: it lists task {task_id!r} twice")
        texts[task_id] = ProblemTexts(prompt=(row[problems.prompt_column] or "") if prompt else "",
                                      reference=(row[problems.reference_column] or "") if reference else "")
    return texts


def _without_prefix(message: str, source: str) -> str:
    """A loader message without its own leading ``SOURCE:`` (the caller names the source once)."""
    return message[len(source) + 2:] if message.startswith(f"{source}: ") else message


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
        raise DataError(f"task {task_id!r} of {os.fspath(source)} is not in {option_value('problems', problems.source)} "
                        f"({count(len(texts), 'task')}, e.g. {known}); give the problem set these generations were made "
                        f"for, or the task id column of either side with {option_named('task_column')} / "
                        f"{option_named('problem_task_column')} (or another split with "
                        f"{option_named('problems_split')})") from None
