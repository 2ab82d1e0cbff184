"""``workbench score`` as a library: load samples, run the methods, write rows as they arrive.

Outputs in the run folder:

* ``scores.jsonl``: one row per (sample, method), appended as each finishes (columns in
  :data:`ROW_COLUMNS` plus carried input columns such as ``passed``);
* ``scores_wide.jsonl``: one row per sample with a score column per method (``null`` when the
  method failed) and the carried columns, rewritten at the end of every run, in the input's
  order (:func:`~workbench.score.wide_table.input_order`): the table to pass to
  ``workbench correlate`` (``-m dsa-cqe -m chrf --label passed``).
* ``traces.jsonl``: one trace per (sample, method): sub-code tree, every prompt and
  response, retrievals and storage updates.
* ``run.json``: configuration, per-method status counts and mean scores, how the LLM
  methods' scores were read (``score_reads``: expected, sampled, or sampled because the
  provider sent no log-probabilities), LLM accounting (calls, cache hits, tokens, cost,
  seconds) and the wall time outside LLM calls.
* ``chroma/``: the embedded Semantic Storage (unless a Chroma server is used).

Resuming (``resume=True``) skips every (task, sample, method) already in
``scores.jsonl``; with ``retry_failed`` the rows whose status is an error are scored again,
and at the end of the run each new row replaces its error row (``scores.jsonl`` is rewritten
atomically with one current row per (task, sample, method); the failed attempts' traces stay
in ``traces.jsonl``). The kept rows of the run's samples take the carried columns as they are
now (``carry``: copies of input columns, not scores), so a resume with another ``--carry``
brings them up to date without scoring again. A resume with a smaller ``limit`` (or
``method_limit``) keeps the finished rows of the samples still selected; the rows of the others
move to ``scores.unselected.jsonl``, out of the tables and counts, and come back, unscored again,
with a later resume that selects them (:func:`~workbench.score.wide_table.keep_current_rows`).
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import os
import re
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from concurrent.futures import wait as wait_for_futures
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.data.language_column import LANGUAGE_COLUMN, language_value, run_language
from workbench.data.loading import holds_text_lists, require_text_columns, text_list_cells
from workbench.data.repeated_prompt import repeated_prompt_note
from workbench.data.samples import SampleKey, check_unique, number_samples, resolve_sample_column, row_key, sample_key
from workbench.data.stop_sequences import truncate_generation
from workbench.errors import (
    PATH_TYPES, TABLE_HINT, DataError, MissingColumnError, WorkbenchError, reject_swapped, require_argument, require_path,
)
from workbench.formatting import count
from workbench.io import JsonlWriter, atomic_write, lock_exclusively, read_jsonl, require_output_folder
from workbench.options import OptionError
from workbench.option_words import fresh_start_advice, option_named, option_set, option_value, other_output_advice
from workbench.resume_guard import (SOURCE_KEY, check_resume_settings, implied_run_dir, rebase_recorded_paths,
                                    record_roots, recorded_path, shown_path)
from workbench.llm.cache import CacheMode, ResponseCache
from workbench.llm.client import CallsStopped, LLMClient, MockResponder, Usage, check_model_usable
from workbench.score.base import MethodResult, Sample, ScoringContext, ScoringMethod, distinct_references
from workbench.score.config import ScoreConfig
from workbench.score.problems import ProblemSet, ProblemTexts, problem_for
from workbench.score.prompts import PromptError
from workbench.score.reading import LOW_MASS, LOW_MASS_NOTE, NO_LOGPROBS, READ_COLUMNS, READ_FALLBACK
from workbench.score.wide_table import (
    RUN_FILE,
    SCORES_FILE,
    TRACES_FILE,
    UNSELECTED_FILE,
    WIDE_SCORES_FILE,
    input_order,
    keep_current_rows,
    unselected_path,
    write_wide_table,
)

if TYPE_CHECKING:
    from workbench.data.loading import LoadedDataset
    from workbench.languages.spec import LanguagePlugin

#: ``run.json``'s ``config`` key of the judges' several-references prompt versions (method -> version;
#: missing in a record written before the judges were shown several references)
SEVERAL_REFERENCES_KEY = "several_references_prompts"

#: held by a run for its whole length, so two runs never write one folder at once
LOCK_FILE = ".score.lock"

#: the columns of every ``scores.jsonl`` row (carried input columns follow)
ROW_COLUMNS = (
    "task_id", "sample_id", "method", "model", "score", "scores", "score_spread", "scale_min", "scale_max",
    "status", "error", "subcodes", "reference_subcodes", "parse_failures", "truncated_answers", "llm_calls", "cache_hits",
    "prompt_tokens", "completion_tokens", "tokens", "cost_usd", "seconds", "llm_seconds", "retry_after", "prompt_version",
    "variant", "model_identity", "references_shown", *READ_COLUMNS,
)

#: per-sample columns of every ``scores.jsonl`` row (kept in ``scores_wide.jsonl``): whether
#: ``--stop`` cut the generation and where, why a generation is no code (null or empty), and
#: the digest of the scored code (:attr:`workbench.score.base.Sample.code_digest`; rows of an
#: older workbench lack it)
SAMPLE_COLUMNS = ("generation_truncated", "stop_sequence", "generation_note", "code_sha256")

#: statuses that ``retry_failed`` scores again
ERROR_STATUSES = frozenset({"llm_error", "parse_error", "budget_exceeded", "error"})


@dataclass
class Columns:
    """Input column names. ``prompt=None`` means: use ``"prompt"`` if the data has it."""

    task: str = "task_id"
    sample: str | None = "sample_id"
    generation: str = "generation"
    reference: str = "reference"
    prompt: str | None = None
    carry: tuple[str, ...] | None = None

    @classmethod
    def of(cls, config: ScoreConfig) -> Columns:
        """The columns ``config`` names (``--task-column``, ..., ``--carry``)."""
        return cls(task=config.task_column, sample=config.sample_column, generation=config.generation_column,
                   reference=config.reference_column, prompt=config.prompt_column, carry=config.carry)


def problem_parts(columns: Columns, available: Iterable[str], *, use_prompt: bool, problems: ProblemSet | None,
                  reference_required: bool) -> tuple[str | None, str | None, bool, bool]:
    """Where each sample's prompt and reference come from: the data's columns, or the problem set.

    Args:
        columns: the column names asked for; available: the data's columns; the rest as
            :func:`load_samples`.

    Returns:
        ``(prompt_column, reference_column, take_prompt, take_reference)``: the data's columns
        read (``None``: none), and whether the problem set supplies the prompt / the reference.
    """
    available = set(available)
    prompt_column = columns.prompt if columns.prompt is not None else ("prompt" if "prompt" in available else None)
    if not use_prompt:
        prompt_column = None
    # what the data lacks comes from the problem set, matched on the task id (as execute does)
    reference_column = columns.reference if columns.reference in available else None
    take_reference = problems is not None and reference_column is None and reference_required
    # without --prompt a reference from the problems is a whole program: the problem's prompt + its solution
    take_prompt = problems is not None and prompt_column is None and (use_prompt or take_reference)
    return prompt_column, reference_column, take_prompt, take_reference


def takes_from_problems(config: ScoreConfig, available: Iterable[str]) -> tuple[bool, bool]:
    """Whether ``config``'s samples of data with the columns ``available`` take their prompt / their
    reference from ``config.problems`` (:func:`problem_parts`; ``workbench run``'s preflight asks).

    Raises:
        WorkbenchError: as :attr:`~workbench.score.config.ScoreConfig.needs_reference`.
    """
    _, _, take_prompt, take_reference = problem_parts(
        Columns.of(config), available, use_prompt=not config.no_prompt, problems=config.problem_set,
        reference_required=config.needs_reference)
    return take_prompt, take_reference


def load_samples(
    source: str | os.PathLike[str],
    columns: Columns | None = None,
    *,
    split: str | None = None,
    limit: int | None = None,
    use_prompt: bool = True,
    select: str = "first",
    stratify_column: str = "passed",
    select_seed: int = 0,
    offline: bool = False,
    problems: ProblemSet | None = None,
    reference_required: bool = True,
    results: str | os.PathLike[str] | None = None,
    notes: list[str] | None = None,
    all_reference_methods: tuple[str, ...] = (),
    loaded: LoadedDataset | None = None,
    problem_texts: Mapping[str, ProblemTexts] | None = None,
) -> list[Sample]:
    """Read samples from any source :func:`workbench.data.loading.load_records` accepts.

    Args:
        source: a data file, folder, bundled name or hub id.
        columns: column names (:class:`Columns`).
        split: keep only this split (default: all splits, in order).
        limit: keep ``limit`` samples (all when None).
        use_prompt: when False the prompt column is ignored (whole programs).
        select: ``"first"`` keeps the first ``limit`` samples in file order; ``"stratified"``
            spreads them over tasks and pass/fail
            (:func:`workbench.score.selection.stratified_subset`).
        stratify_column: the outcome column for ``"stratified"`` (carried into every row).
        select_seed: seed of the stratified selection.
        offline: never contact the Hugging Face hub (a hub id is read from the local cache).
        problems: a problem set whose prompt and reference solution a sample takes, by its task
            id, where the data has no prompt column (and ``use_prompt``) or no reference column
            (:mod:`workbench.score.problems`).
        reference_required: whether a method needs the reference (``False``: only ``p-correct
            --no-reference``); without one, a missing reference column leaves it empty.
        results: a ``workbench execute`` results file whose ``passed`` each sample carries
            (joined on task and sample id; it replaces a ``passed`` column of the data), for
            ``"stratified"`` and for the rows (:mod:`workbench.score.outcomes`); a sample
            without a verdict there is left out, and ``notes`` says how many.
        notes: sentences for the run summary are appended here (samples left out; a list column
            ``references`` beside the text reference column read, when ``all_reference_methods``
            would use all of a sample's references; a stratified subset in which some tasks have one
            outcome only, :func:`~workbench.score.selection.balance_note`).
        all_reference_methods: the run's methods that use every reference (:func:`all_reference_methods`:
            ``chrf`` and the judges shown them all).
        loaded: ``source`` as already read (:func:`~workbench.data.loading.load_records` with this
            ``split`` and ``offline``), so that a caller that holds it (``workbench run``'s preflight)
            does not read the data again; ``None``: read here.
        problem_texts: ``problems`` as already read for the parts these samples take from it
            (:func:`~workbench.score.problems.load_problem_texts` with the prompt / reference that
            :func:`problem_parts` says they take), so that a caller that holds them (``workbench run``'s
            preflight, :func:`takes_from_problems`) does not read the problem set again; ``None``: read
            here where the samples take a part from it.

    Returns:
        samples; without a sample column ``sample_id`` numbers the samples 0, 1, ... per task
        in file order (as ``workbench execute`` does); ``carry`` defaults to ``("passed",)`` when the data has that column.
        A reference column of lists (a list of strings per row, or a string in some rows and a list
        in others) gives each sample its distinct non-blank references in ``references``
        (:func:`~workbench.score.base.distinct_references`) and the first of them in ``reference``;
        a text column gives ``reference`` alone, as before.

    Raises:
        MissingColumnError / MissingSplitError / DataError: as the loader, plus duplicate
            (task, sample) pairs, ``results`` without a verdict for any sample, and a reference
            cell that is neither text, nor a list of texts, nor null.
    """
    from workbench.data.loading import load_records
    from workbench.score.outcomes import OUTCOME_COLUMN, missing_verdicts_note, other_source_note, read_outcomes

    columns = columns or Columns()
    if loaded is None:
        loaded = load_records(source, splits=[split] if split else None, offline=offline)
    available = loaded.column_names
    prompt_column, reference_column, take_prompt, take_reference = problem_parts(
        columns, available, use_prompt=use_prompt, problems=problems, reference_required=reference_required)
    if reference_column is None and reference_required and problems is None:
        raise MissingColumnError(columns.reference, available, hint=(
            f"set it with {option_named('reference_column')}, or take each task's reference solution from a problem "
            f"set with {option_named('problems')}, e.g. {option_value('problems', 'humaneval')}; p-correct alone also "
            f"runs with {option_value('reference', False)}"))
    if reference_column is None and reference_required and columns.reference != Columns().reference:
        # a column named on purpose that is not there is a typo, not a wish for the problems' references
        raise MissingColumnError(columns.reference, available, hint=(
            f"fix {option_named('reference_column')}, or leave it at its default for the problem set's reference "
            "solution where the data has none"))
    if not (take_reference or take_prompt):
        problem_texts = None
    elif problem_texts is None:
        from workbench.score.problems import load_problem_texts

        problem_texts = load_problem_texts(problems, prompt=take_prompt, reference=take_reference)
    sample_column = resolve_sample_column(available, columns.sample)
    loaded.require_columns(
        {
            option_named("task_column"): columns.task,
            option_named("sample_column"): sample_column,
            option_named("generation_column"): columns.generation,
            option_named("prompt_column"): prompt_column,
        }
    )
    # a reference column of lists gives each sample all its references (one or several per row)
    listed = reference_column is not None and all(
        holds_text_lists(dataset, reference_column) for dataset in loaded.splits.values())
    reference_lists: list[tuple[str, ...]] = []
    for split, dataset in loaded.splits.items():
        where = (f"the generations ({source}, split {split!r})" if len(loaded.splits) > 1
                 else f"the generations ({source})")
        # a number or a list would be scored as its repr; execute refuses the same columns alike
        require_text_columns(dataset, {option_named("generation_column"): columns.generation,
                                       option_named("prompt_column"): prompt_column,
                                       option_named("reference_column"): None if listed else reference_column},
                             where=where)
        if listed:
            reference_lists.extend(text_list_cells(dataset, reference_column, option_named("reference_column"), where))
    from workbench.score.selection import SELECTIONS, stratified_subset

    if select not in SELECTIONS:
        raise DataError(f"unknown selection {select!r}; choose from {', '.join(SELECTIONS)}")
    outcomes = read_outcomes(results) if results is not None else None
    if outcomes is not None and notes is not None:
        note = other_source_note(results, source)
        if note:
            notes.append(note)
    # a column the results supply need not be in the data
    supplied = {OUTCOME_COLUMN} if outcomes is not None else set()
    stratified = select == "stratified" and limit is not None
    if stratified and stratify_column not in supplied and stratify_column not in available:
        raise MissingColumnError(stratify_column, available, hint=(
            f"set it with {option_named('stratify_column')}, or take each sample's outcome from the results of "
            f"workbench execute with {option_named('results', flag='--results RESULTS.jsonl')}"))
    carry = columns.carry if columns.carry is not None else tuple(
        c for c in ("passed",) if c in available or c in supplied)
    if stratified and stratify_column not in carry:
        carry = (*carry, stratify_column)
    if outcomes is not None and OUTCOME_COLUMN not in carry:
        carry = (*carry, OUTCOME_COLUMN)
    loaded.require_columns({option_named("carry"): c for c in carry if c not in supplied})
    if notes is not None and all_reference_methods and not listed and reference_column is not None:
        # the layout readers name a sample's list of references "references" (the CoNaLa grade files)
        spare = [name for name in ("references",) if name in available and name != reference_column
                 and all(holds_text_lists(dataset, name) for dataset in loaded.splits.values())]
        if spare:
            notes.append(f"the data's column {spare[0]!r} holds the references of each sample as a list; the run reads "
                         f"one, from {reference_column!r} ({option_value('reference_column', spare[0])} gives "
                         f"{' and '.join(all_reference_methods)} all of them)")
    has_language = LANGUAGE_COLUMN in available
    samples: list[Sample] = []
    without_verdict: list[SampleKey] = []
    rows = (row for dataset in loaded.splits.values() for row in dataset)
    if listed:  # each row with its references, read and checked above
        rows = ({**row, reference_column: texts} for row, texts in zip(rows, reference_lists))
    for task_id, sample_id, row in number_samples(rows, columns.task, sample_column, where=f"the generations ({source})"):
        carried = {c: row[c] for c in carry if c not in supplied}
        if outcomes is not None:
            key = sample_key(task_id, sample_id)
            if key not in outcomes:
                without_verdict.append(key)
                continue
            carried[OUTCOME_COLUMN] = outcomes[key]
        problem = problem_for(problem_texts, task_id, source, problems) if problem_texts is not None else None
        references: tuple[str, ...] = ()
        listed_references = 0
        if listed:
            # blank entries are no reference, and one given twice is one (CoNaLa lists 'type(v)' 4 times);
            # the first of them is the sample's reference
            references = distinct_references(row[reference_column])
            listed_references = sum(bool(text.strip()) for text in row[reference_column])
            reference = references[0] if references else ""
        elif reference_column is not None:
            reference = row[reference_column] or ""
        elif take_reference:
            reference = problem.reference if use_prompt else problem.prompt + problem.reference
        else:
            reference = ""
        if prompt_column is not None:
            prompt = row[prompt_column] or ""
        else:
            prompt = problem.prompt if take_prompt and use_prompt else ""
        samples.append(
            Sample(
                task_id=task_id,
                sample_id=sample_id,
                generation=row[columns.generation] or "",
                generation_null=row[columns.generation] is None,
                reference=reference,
                prompt=prompt,
                carried=carried,
                from_problems=tuple(part for part, taken in (("prompt", take_prompt and use_prompt),
                                                              ("reference", take_reference)) if taken),
                language=language_value(row[LANGUAGE_COLUMN]) if has_language else None,
                references=references,
                position=len(samples),
                listed_references=listed_references,
            )
        )
        if limit is not None and not stratified and len(samples) >= limit:
            break
    if without_verdict:
        note = missing_verdicts_note(results, without_verdict, len(samples))
        if notes is not None:
            notes.append(note)
    check_unique((s.key for s in samples), where=f"the samples ({source})",
                 columns=(columns.task, sample_column or "numbered sample id"),
                 hint=f"name a column with a unique id in {option_named('sample_column')}")
    if stratified:
        picked = stratified_subset(samples, limit, label=stratify_column, seed=select_seed)
        if notes is not None:  # here, where the tasks' outcomes in the data are known
            from workbench.score.selection import balance_note

            note = balance_note(picked, stratify_column, limit, candidates=samples)
            if note:
                notes.append(note)
        return picked
    return samples


@dataclass
class RunReport:
    """What a run did (also written to ``run.json``).

    Attributes:
        rows_written: rows appended by this invocation.
        resumed_rows: (sample, method) pairs of this invocation found in ``scores.jsonl`` and
            not scored again.
        statuses: method -> status -> count over every row of the folder's ``scores.jsonl``
            (a resumed run counts the rows of the runs it continued, as an uninterrupted run
            would; :func:`summarise_rows`).
        mean_scores: method -> mean score of the folder's ``ok`` rows.
        score_reads: LLM method -> how the folder's ``ok`` rows were read -> count (``expected``,
            ``sampled``, or ``sampled-fallback`` where ``expected`` was asked for but the
            provider sent no usable log-probabilities).
        read_issues: LLM method -> what is wrong with how some ``ok`` rows were read -> count:
            :data:`FALLBACK_NONE_RETURNED`, :data:`FALLBACK_UNREADABLE` (why a row fell back to
            its sampled answers) and :data:`LOW_MASS_NOTE` (an expected-mode read with less than
            :data:`~workbench.score.reading.LOW_MASS` of the probability on the allowed labels).
        usage: LLM accounting of this invocation only.
        wall_seconds: this invocation's wall time.
        llm_seconds: wall time inside LLM calls of this invocation (summed over threads).
        outside_llm_share: 1 - llm_seconds / (wall_seconds * min(workers, samples to score)),
            the share of the busy workers' time spent outside LLM calls (``None`` when
            nothing ran).
        paths: output files.
        failures: the verdict on the folder's rows (:func:`workbench.failures.check_failures`
            per method: ``exit_status``, ``message``, ``limit``, ``counts``), what the command's
            exit status is.
        notes: what the user should know about the samples (:func:`sample_notes`: generations
            cut at a stop sequence, null or empty generations) and about rows set aside, printed
            after the table (those sent to ``on_note`` before the run: see ``announced_notes``).
        retried_rows: (sample, method) pairs of this invocation whose failed row it scores again
            (``retry_failed``; rows set aside as not selected are not among them).
        set_aside_rows: finished rows of samples this resumed run does not select (a smaller
            ``limit`` or ``method_limit``) that it moved to ``scores.unselected.jsonl`` (not those
            an earlier resume put there, which stay: a second resume at the same limit moves 0).
        failure_reasons: method -> its most common failure over the folder's rows
            (:func:`failure_reasons`), for the methods with failed rows: what the terminal says
            next to the counts.
        announced_notes: how many of the first ``notes`` went to ``on_note`` before any row was
            scored (:func:`score_samples`), so a printer shows only the rest at the end; not in
            ``run.json``.
    """

    rows_written: int
    resumed_rows: int
    statuses: dict[str, dict[str, int]]
    mean_scores: dict[str, float | None]
    score_reads: dict[str, dict[str, int]]
    usage: dict[str, Any]
    wall_seconds: float
    llm_seconds: float
    outside_llm_share: float | None
    paths: dict[str, str]
    read_issues: dict[str, dict[str, int]] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    failures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    retried_rows: int = 0
    set_aside_rows: int = 0
    failure_reasons: dict[str, dict[str, Any]] = field(default_factory=dict)
    announced_notes: int = 0

    @property
    def exit_status(self) -> int:
        """0, or 3 (a method has no usable row) or 4 (failures above ``max_failures``); see
        :mod:`workbench.failures`."""
        return int(self.failures.get("exit_status", 0))


def failure_verdict(statuses: dict[str, dict[str, int]], config: ScoreConfig, flag: str | None = None):
    """Judge a run's rows: per method, its failed rows (:data:`ERROR_STATUSES`) and its ``ok`` ones.

    Returns:
        a :class:`workbench.failures.FailureVerdict`.
    """
    from workbench.failures import check_failures

    counts = {name: (sum(n for status, n in counter.items() if status in ERROR_STATUSES), counter.get("ok", 0),
                     sum(counter.values())) for name, counter in statuses.items()}
    return check_failures(counts, config.max_failures, flag=flag)


def _canonical_language(name: str) -> str:
    from workbench.languages.registry import canonical_language  # the plugins load when a run starts, not on import

    return canonical_language(name)


def _config_record(config: ScoreConfig, methods: list[ScoringMethod],
                   source: str | os.PathLike[str] | None = None,
                   run_dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The settings behind a run's rows, as ``run.json``'s ``config`` records them.

    Args:
        config: the run's options, ``language`` resolved (:func:`score_samples`: canonical, never ``None``).
        methods: the run's methods (their prompt versions and variants are recorded).
        source: the data the samples came from (recorded as :func:`~workbench.resume_guard.recorded_path`);
            ``None`` when the caller gave samples only (not recorded, so not checked).
        run_dir: the ``workbench run`` folder the output lies in: the data source, ``problems``
            and ``results`` inside it are recorded relative to it
            (:func:`~workbench.resume_guard.recorded_path`; the execute stage's results as
            ``<run folder>/execute/results.jsonl``), so the folder moved or copied resumes.

    Returns:
        the record: JSON values, the model settings ``None`` when no method calls a model.
    """
    llm = config.llm
    record: dict[str, Any] = {
        "methods": {m.name: m.prompt_version for m in methods},
        # the judges' prompts for a sample with several references (their own versions)
        SEVERAL_REFERENCES_KEY: {m.name: m.several_references_version for m in methods if m.several_references_version},
        "variants": {m.name: m.variant for m in methods if m.variant},
        "model": llm.model if llm else None,
        # a local model's file (its sha256); a served model is its name: the same model behind
        # another port or host (a restarted server) resumes
        "model_identity": (llm.identity if llm.model.startswith("local/") else llm.model) if llm else None,
        "api_base": llm.api_base if llm else None,
        "temperature": llm.temperature if llm else None,
        "top_p": llm.top_p if llm else None,
        "max_tokens": llm.max_tokens if llm else None,
        "structured": llm.structured if llm else None,
        "seed": llm.seed if llm else None,
        "n_samples": config.n_samples,
        "max_subcodes": config.max_subcodes,
        "k_nearest": config.k_nearest,
        "language": config.language,  # as score_samples resolved it: canonical (``py`` and ``python`` are one setting)
        "embedding_model": config.embedding_model or "minilm",
        # and every option declared with option(..., recorded=True), e.g. a new scoring mode
        **{name: config.recorded_value(name) for name in RECORDED_OPTIONS},
    }
    if source is not None:
        record[SOURCE_KEY] = recorded_path(source, run_dir)
    if config.problems is not None:  # a path by any spelling is one problem set, as the data source is
        record["problems"] = recorded_path(config.problems, run_dir)
    if config.results is not None:
        from workbench.score.outcomes import outcomes_digest, read_outcomes

        record["results"] = recorded_path(config.results, run_dir)
        # the selection rests on the verdicts: new ones at the same path must not join old rows
        record["results_verdicts"] = outcomes_digest(read_outcomes(config.results))
    return record


def _prompt_column_as_read(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with a recorded default prompt column (``None``) as the column it reads: ``prompt``."""
    if "prompt_column" in record and record["prompt_column"] is None:
        return {**record, "prompt_column": "prompt"}
    return record


#: options declared ``recorded`` on :class:`ScoreConfig` (beyond the fixed ones above): recorded in
#: ``run.json`` and checked on resume, without another line here
RECORDED_OPTIONS = tuple(name for name, item in ScoreConfig.options().items() if item.declared.recorded)

#: the recorded settings that are paths (:func:`~workbench.resume_guard.recorded_path`)
PATH_SETTINGS = (SOURCE_KEY, "problems", "results")

#: settings of the model call: not compared when the resumed run calls no model (recorded as ``None``)
LLM_SETTINGS = ("model", "model_identity", "api_base", "temperature", "top_p", "max_tokens", "structured", "seed")
#: recorded but not compared on resume: where a served model answers (a restarted server may
#: come back on another port), not which model answers
NOT_COMPARED = ("api_base",)

#: settings recorded in ``run.json`` that change what a sample scores; a resumed run must keep them
SCORE_CHANGING_OPTIONS = (
    SOURCE_KEY, *LLM_SETTINGS, "n_samples", "max_subcodes", "k_nearest", "language", "embedding_model",
    *RECORDED_OPTIONS, "results_verdicts",
)


def _check_resume_compatible(run_file: Path, record: dict[str, Any],
                             run_dir: str | os.PathLike[str] | None = None, *, several_references: bool = False,
                             shown_several: set[str] | None = None, written_before: set[str] | None = None) -> None:
    """Refuse to resume a run folder scored with other score-changing settings
    (:data:`SCORE_CHANGING_OPTIONS`: the data source, the columns, the methods' and the
    model's options) or other prompts.

    Settings the folder's ``run.json`` does not record (written by an older version) are taken
    from its ``options`` (every option in force) where it has them, else not checked; the model
    settings are not checked when this run calls no model (they cannot change its scores).
    What only changes which samples or how fast (``limit``, ``workers``, ``max_failures``) is
    not compared: a larger ``limit`` extends the run.

    Args:
        run_file: the folder's ``run.json`` (missing or unreadable: nothing to check).
        record: this run's :func:`_config_record`.
        run_dir: the ``workbench run`` folder (as :func:`_config_record`): a record of an earlier
            version, which holds the paths inside it as absolute paths, is read with them relative
            to the folder it was written in (known from its own recorded path) or to this one.
            ``None`` (a job on its own) resuming a ``workbench run`` folder's scores (the stage's
            command line rerun by hand): the folder is found from a ``<run folder>/...`` path of
            the record (:func:`~workbench.resume_guard.implied_run_dir`), and ``record`` names the
            paths inside it so too.
        several_references: some sample of this run has several references: a folder scored before
            the judges were shown them all (its record has no :data:`SEVERAL_REFERENCES_KEY`) showed
            its judges the first only, and its rows must not be joined by rows that saw them all.
        shown_several: the methods of which a row of the folder (``scores.jsonl`` or the rows set
            aside) was shown several references (its ``references_shown`` above 1): only their
            several-references prompts must be unchanged (a folder of one-reference rows resumes
            whatever that form now says); ``None``: not known, every method's must.
        written_before: the methods of which a row of the folder has no ``references_shown`` (written
            before the judges were shown every reference: with several, they saw the first only). With
            ``several_references`` those are refused as a record without :data:`SEVERAL_REFERENCES_KEY`
            is, also when the record has it (a resume that selected no sample with several rewrote it).

    Raises:
        ResumeMismatchError: naming every changed setting with its recorded and new value, and
            how to proceed (the same values, a new ``--output``, or ``--overwrite``).
        WorkbenchError: a method's prompts changed (another prompt version), or the folder's judges were
            shown the first of several references only; it ends with the way out of the command that runs
            it (:func:`~workbench.option_words.fresh_start_advice`: ``workbench run`` takes no ``--output``).
    """
    if not run_file.exists():
        return
    try:
        written = json.loads(run_file.read_text())
        previous = dict(written.get("config", {}))
        recorded_options = written.get("options") or {}
    except (OSError, ValueError, AttributeError):
        return
    # a run.json written before a setting joined ``config`` may still hold it among its options
    previous.update({key: recorded_options[key] for key in SCORE_CHANGING_OPTIONS
                     if key not in previous and key in recorded_options and key not in LLM_SETTINGS})
    if run_dir is not None:
        # the folder it was written in: from the path it recorded for itself (a finished run's)
        then = (written.get("paths") or {}).get("run") if isinstance(written.get("paths"), dict) else None
        previous = rebase_recorded_paths(previous, PATH_SETTINGS, record_roots(then, run_file, run_dir))
    elif (root := implied_run_dir(previous, record, PATH_SETTINGS, run_file)) is not None:
        # workbench score run by hand on a workbench run's folder (the stage's recorded command line):
        # its paths inside the folder are the record's <run folder>/... ones, and are recorded so again
        record.update(rebase_recorded_paths(record, PATH_SETTINGS, [root]))
    if isinstance(previous.get("language"), str):  # recorded as typed before names were made canonical
        previous["language"] = _canonical_language(previous["language"])
    if previous.get("model") and "score_mode" not in previous:
        # written before score modes existed: its LLM scores were the written (sampled) ones
        previous = {**previous, "score_mode": "sampled"}
    # the default prompt column is 'prompt' (when the data has one; when it has none, naming it
    # fails at load): the default and an explicit --prompt-column prompt are one setting
    previous, record = _prompt_column_as_read(previous), _prompt_column_as_read(record)
    current = record if record.get("model") is not None else {
        key: value for key, value in record.items() if key not in LLM_SETTINGS}
    if previous.get("model", current.get("model")) != current.get("model"):
        # the identity follows from the model: the message names the model only
        current = {key: value for key, value in current.items() if key != "model_identity"}
    check_resume_settings(previous, current, made_with="the run folder was scored with", record=str(run_file),
                          keys=[key for key in SCORE_CHANGING_OPTIONS if key not in NOT_COMPARED],
                          options=ScoreConfig.options())
    for name, version in record["methods"].items():
        old = previous.get("methods", {}).get(name)
        if old is not None and old != version:
            raise WorkbenchError(
                f"cannot resume: the prompts of {name} changed (version {old} -> {version}); {fresh_start_advice()}"
            )
    shown = record.get(SEVERAL_REFERENCES_KEY, {})
    # the record tells, and so do the rows, which stay (set aside or not) when a resume rewrites the record
    first_only = [name for name in shown if (name in (previous.get("methods") or {}) and SEVERAL_REFERENCES_KEY
                                             not in previous) or name in (written_before or ())]
    if several_references and first_only:
        raise WorkbenchError(
            f"cannot resume: the run folder was scored by an earlier workbench, which showed {' and '.join(first_only)} "
            f"only the first of several references; {fresh_start_advice()}"
        )
    for name, version in shown.items():
        old = (previous.get(SEVERAL_REFERENCES_KEY) or {}).get(name)
        if old is not None and old != version and (shown_several is None or name in shown_several):
            raise WorkbenchError(
                f"cannot resume: the prompts of {name} for samples with several references changed (version {old} -> "
                f"{version}); {fresh_start_advice()}"
            )


def _check_references_shown(rows: Iterable[dict[str, Any]], samples: list[Sample], methods: list[ScoringMethod], *,
                            retry_failed: bool = False) -> None:
    """Refuse a resume that would keep rows of an earlier workbench, which showed the judges a reference
    listed more than once in a list-valued reference column as several (CoNaLa's ``['type(v)']`` x 4), under
    the several-references prompt, before a repeat counted once (:func:`~workbench.score.base.
    distinct_references`): kept, they would sit beside rows asked the one-reference prompt. Such a row was
    shown every text its sample's cell lists (:attr:`~workbench.score.base.Sample.listed_references`), more
    than the sample's distinct references. Only the judges' rows count (:attr:`~workbench.score.base.
    ScoringMethod.shows_all_references`): chrF's score against a repeated reference is its score against the
    one.

    Args:
        rows: the folder's finished rows (``scores.jsonl`` and the rows set aside); samples: this run's;
        methods: its methods; retry_failed: failed rows are scored again, so they are not kept.

    Raises:
        OptionError: naming how many rows of which method, the first of them (its count then and now), the
            ``reference_column`` and the way out (:func:`~workbench.option_words.fresh_start_advice`).
    """
    judges = {method.name: method for method in methods if method.shows_all_references and method.needs_reference}
    if not judges:
        return
    by_key = {sample.key: sample for sample in samples}
    found: dict[str, list[tuple[dict[str, Any], int]]] = {}
    for row in rows:
        method, sample = judges.get(row.get("method")), by_key.get(row_key(row))
        if method is None or sample is None or (retry_failed and row.get("status") in ERROR_STATUSES):
            continue
        now = len(method.references_shown(sample))
        if row.get("references_shown") == sample.listed_references > max(now, 1):
            found.setdefault(method.name, []).append((row, now))
    if not found:
        return
    rows_found = sum(map(len, found.values()))
    row, now = next(iter(found.values()))[0]
    whose = (f"of {next(iter(found))} in the run folder" if len(found) == 1 else
             f"in the run folder ({', '.join(f'{name} {len(kept)}' for name, kept in found.items())})")
    raise OptionError(
        f"cannot resume: {count(rows_found, 'row')} {whose} {'was' if rows_found == 1 else 'were'} scored by an "
        f"earlier workbench, which showed the judge a reference listed more than once in {{reference_column}} as "
        f"several references (task {row['task_id']} sample {row['sample_id']}: {row['references_shown']} shown, "
        f"{now} distinct now); {fresh_start_advice()}", "reference_column")


def _check_carried_columns(samples: list[Sample], methods: list[ScoringMethod]) -> None:
    """Refuse carried columns that would clash with the output's own columns.

    A carried column named like a row column (``model``, ``score``, ...) would be dropped from
    ``scores.jsonl`` rows, and one named like a method (the ICE-Score file's ``chrf``) would
    overwrite that method's score in ``scores_wide.jsonl``.

    Raises:
        OptionError: naming the column.
    """
    taken = {*ROW_COLUMNS, *SAMPLE_COLUMNS, *(m.name for m in methods)}
    for column in dict.fromkeys(c for sample in samples for c in sample.carried):
        if column in taken:
            what = ("a column of every scores.jsonl row" if column in (*ROW_COLUMNS, *SAMPLE_COLUMNS)
                    else "a scoring method of this run")
            raise OptionError(
                f"{{carry}} {column}: that name is {what}, so the carried values would be lost or would replace "
                f"our own; rename the input column (e.g. to shipped_{column}) before scoring", "carry",
            )


def check_decomposable(language: LanguagePlugin, methods: list[ScoringMethod]) -> None:
    """Refuse methods that decompose programs when the language's plugin maps no node type to a
    sub-code kind: each program would be analysed whole (eight empty sets) or fail one by one
    (no map), and neither says so before the run.

    Raises:
        OptionError: naming the methods, the plugin and the methods that need no decomposition.
    """
    decomposing = [m.name for m in methods if m.needs_decomposition]
    if decomposing and "decompose" not in language.capabilities():
        raise OptionError(
            f"{', '.join(decomposing)} decomposes programs, but the {language.name} plugin maps no grammar node "
            f"type to a sub-code kind (its subcode_node_types): pass another {{method}} (dsa-cqe-simplified, "
            f"ice-score, p-correct and chrf need no decomposition), or add the map to the plugin (docs/plugins.md, "
            f"section 5)", "method",
        )


def check_several_references(samples: list[Sample], methods: list[ScoringMethod]) -> None:
    """Refuse, before any sample is scored, methods that cannot use every reference of a sample that has
    several (:func:`refuse_several_references`). Never silently the first reference.

    Raises:
        OptionError, PromptError: as :func:`refuse_several_references`.
    """
    refuse_several_references(sum(len(sample.references) > 1 for sample in samples), count(len(samples), "sample"),
                              methods)


def refuse_several_references(several: int, out_of: str, methods: list[ScoringMethod]) -> None:
    """Refuse methods that cannot use every reference of the ``several`` samples that have more than one:
    a method that compares with one reference, and a judge whose several-references template cannot be
    read (a ``--prompts-dir`` made before it existed). What ``workbench score`` checks before any sample,
    and ``workbench run``'s preflight before any stage (on the data's rows).

    Args:
        several: how many samples (rows) have more than one non-blank reference; ``0`` refuses nothing.
        out_of: how many there are, as said (``"4 samples"``, ``"4 rows"``).
        methods: the run's methods.

    Raises:
        OptionError: naming the methods, ``reference_column`` and the methods that use every reference.
        PromptError: a judge's several-references template is missing or malformed.
    """
    from workbench.score.methods import METHODS

    if not several:
        return
    one = [m.name for m in methods if m.needs_reference and not (m.uses_all_references or m.shows_all_references)]
    if one:
        accepting = [name for name, cls in METHODS.items() if cls.uses_all_references or cls.shows_all_references]
        raise OptionError(
            f"{' and '.join(one)} {'compares' if len(one) == 1 else 'compare'} a generation with one reference, but "
            f"{several} of {out_of} {'has' if several == 1 else 'have'} several in "
            f"{{reference_column}}: score them with {', '.join(accepting[:-1])} or {accepting[-1]} (which use every "
            f"reference), or name a column of one reference", "reference_column", "method",
        )
    for method in methods:
        if method.shows_all_references and method.needs_reference and method.several_references_problem:
            raise PromptError(f"{method.several_references_problem}; {method.name} needs it to show the judge the "
                              f"several references of {several} of {out_of} (copy it from "
                              f"the shipped prompts/ into the prompts folder)")


def score_samples(
    samples: Iterable[Sample],
    config: ScoreConfig,
    output_dir: str | os.PathLike[str],
    *,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_wait: Callable[[int], None] | None = None,
    mock_response: str | MockResponder | None = None,
    extra_llm_params: dict[str, Any] | None = None,
    source: str | os.PathLike[str] | None = None,
    loading_notes: Iterable[str] = (),
    on_note: Callable[[str], None] | None = None,
    run_dir: str | os.PathLike[str] | None = None,
) -> RunReport:
    """Score ``samples`` with every method of ``config`` and write the run folder.

    Args:
        samples: the samples (see :func:`load_samples`).
        config: a :class:`~workbench.score.config.ScoreConfig`.
        output_dir: the run folder.
        on_row: called with each row as it is written (progress display).
        on_start: called once before scoring with (rows to score, rows already in
            ``scores.jsonl``), both counting this run's (sample, method) pairs.
        on_wait: called with (samples still being scored, whether their calls are being
            abandoned) when an interrupt (Ctrl-C) has to wait for their current LLM calls: no new
            request or retry is sent after it; a sample whose current call was its last is
            written, any other is left for ``--resume``; a second Ctrl-C abandons the calls
            (:func:`_wait_for_samples_in_flight`).
        mock_response: passed to litellm as ``mock_response`` (tests, dry runs): a text or a
            function of (messages, schema). A mock stands in for the model: its answers are
            cached as mocked (never answering a real call) but not keyed by their text, as a
            model's are not, and priced as the model's would be (a dry run's cost estimate);
            compare two mocks with ``cache="off"``.
        extra_llm_params: more keyword arguments of every ``litellm.completion`` call (tests).
        source: the data ``samples`` came from, recorded in ``run.json`` so that a resume from
            other data is refused (``None``: not recorded).
        loading_notes: what loading the samples found that the summary must say
            (:func:`select_samples`' ``notes``), printed before :func:`sample_notes`.
        on_note: called with each note on the input (``loading_notes``, then
            :func:`sample_notes`: a ``limit`` above the data, repeated prompts, null
            generations ...) once the run folder is ready and before ``on_start`` and the first
            row, so a long run is not waited out to learn of it; the report still holds every
            note (``announced_notes`` counts these).
        run_dir: the ``workbench run`` folder that ``output_dir`` lies in (``None``: a job on its
            own): the paths inside it that ``run.json`` records (the execute stage's results) are
            recorded relative to it (:func:`_config_record`), so the folder moved or copied resumes;
            its ``options`` and output ``paths`` name them so too (``<run folder>/score/llm/scores.jsonl``;
            the report returned names them as given).

    Returns:
        the :class:`RunReport`.

    Raises:
        DataError: two samples share a (task, sample) id; the samples name several languages
            (:attr:`Sample.language`); a file stands where ``output_dir`` goes
            (:func:`workbench.io.require_output_folder`).
        OptionError: ``config.language`` contradicts the samples' language.
        ResumeMismatchError: ``resume`` with settings other than the folder's ``run.json`` records
            (:func:`_check_resume_compatible`); the folder is left as it was.
        WorkbenchError: an existing run folder without ``resume``/``overwrite``, a missing
            local provider, an unusable Chroma store. Per-sample LLM failures are never
            raised: they are rows with their status.
    """
    from workbench.languages.registry import get_language

    samples = list(samples)
    methods = config.make_methods()
    _check_carried_columns(samples, methods)
    check_unique((s.key for s in samples), where="the samples to score", hint="every (task, sample) pair must be unique")
    # run.json's "options" are the options as given (language None: the data's), as workbench run
    # records them; its "config" holds the language resolved here
    options = config.effective_options()
    # the input paths among them inside a workbench run folder relative to it (<run folder>/...), as
    # in ``config``: a moved or copied folder's record does not name the old location
    options.update({name: shown_path(options[name], run_dir) for name in ("problems", "results")
                    if isinstance(options.get(name), str)})
    # one language for the run, the data's unless given (Java is never decomposed with the Python
    # grammar); canonical, so ``-l py`` and ``-l python`` are one setting in run.json and on resume
    config = dataclasses.replace(config, language=run_language(
        config.language, {f"the data ({os.fspath(source)})" if source is not None else "the samples":
                          [sample.language for sample in samples]}))
    language = get_language(config.language)
    check_decomposable(language, methods)
    check_several_references(samples, methods)
    out = Path(output_dir)
    require_output_folder(out, f"--output {os.fspath(out)}")
    out.mkdir(parents=True, exist_ok=True)
    lock = _lock_run_folder(out)
    try:
        scores_path, traces_path, run_path = out / SCORES_FILE, out / TRACES_FILE, out / RUN_FILE
        if scores_path.exists() and scores_path.stat().st_size and not (config.resume or config.overwrite):
            raise OptionError(f"{scores_path} exists; pass {{resume}} to continue that run or {{overwrite}} to replace it",
                              "resume", "overwrite")
        record = _config_record(config, methods, source, run_dir)
        # also the rows an earlier resume set aside (a smaller --limit): selected again, they come back
        finished = [*read_jsonl(unselected_path(scores_path)), *read_jsonl(scores_path)] if config.resume else []
        if config.resume:
            _check_resume_compatible(run_path, record, run_dir,
                                     several_references=any(len(sample.references) > 1 for sample in samples),
                                     shown_several={row.get("method") for row in finished
                                                    if isinstance(row.get("references_shown"), int)
                                                    and row["references_shown"] > 1},
                                     written_before={row.get("method") for row in finished
                                                     if "references_shown" not in row})
            _check_references_shown(finished, samples, methods, retry_failed=config.retry_failed)

        done: set[tuple[str, str, str]] = set()
        failed: set[tuple[str, str, str]] = set()  # rows retry_failed scores again (unless also done)
        if config.resume:
            for row in finished:
                if config.retry_failed and row.get("status") in ERROR_STATUSES:
                    failed.add((*row_key(row), row["method"]))
                    continue
                done.add((*row_key(row), row["method"]))
        else:
            unselected_path(scores_path).unlink(missing_ok=True)  # an earlier run's, as its scores.jsonl

        llm = None
        cache = None
        if any(m.uses_llm for m in methods):
            if config.response_cache_dir is not None:
                cache = ResponseCache(config.response_cache_dir, CacheMode(config.cache))
            llm = LLMClient(config.llm, cache, mock_response=mock_response, extra_params=extra_llm_params or {})
        context = ScoringContext(
            language=language,
            llm=llm,
            n_samples=config.n_samples,
            score_mode=config.score_mode,
            max_subcodes=config.max_subcodes,
            k_nearest=config.k_nearest,
            storage_factory=lambda: _open_storage(config, out),
            run_key=f"{out.resolve()}",
            keep_storage=config.keep_storage,
            analysis_max_tokens=config.analysis_max_tokens or None,
        )
        # the folder's own check above gives the message for an existing run; here "new" is "overwrite"
        mode = "resume" if config.resume else "overwrite"
        scores_writer = JsonlWriter(scores_path, mode, keep_rows=False)
        traces_writer = JsonlWriter(traces_path, mode, keep_rows=False)
        atomic_write(run_path, json.dumps({"config": record, "options": options, "status": "running"},
                                          indent=2))

        written = 0
        started = time.perf_counter()

        # --method-limit: a method scores only the first N samples (in selection order)
        limits = config.method_limits
        position = {sample.key: index for index, sample in enumerate(samples)}

        def wanted(sample: Sample, method: ScoringMethod) -> bool:
            return position[sample.key] < limits.get(method.name, len(samples))

        own_methods = {method.name: method for method in methods}

        def selected(row: dict[str, Any]) -> bool:
            """A row of this run's samples, of a method it does not run or within the method's limit."""
            method = own_methods.get(row.get("method"))
            key = row_key(row)
            return key in position and (method is None or wanted(samples[position[key]], method))

        def work(sample: Sample) -> list[dict[str, Any]]:
            rows = []
            for method in methods:
                if (*sample.key, method.name) in done or not wanted(sample, method):
                    continue
                began = time.perf_counter()
                try:
                    if stopped.is_set():
                        return rows  # interrupted: the sample's other methods stay unscored, for --resume
                    if method.needs_reference and not sample.reference.strip():
                        # nothing to compare against: recorded, never silently dropped
                        result = MethodResult(status="skipped", error="the reference is empty")
                    else:
                        result = method.score(sample, context)
                except CallsStopped:
                    return rows  # interrupted mid-sample: no row, so a plain --resume scores it
                except WorkbenchError:
                    raise  # configuration problems (storage, provider) stop the run
                except Exception as error:  # a bug or a hostile input: record it, keep going
                    result = MethodResult(status="error", error=f"{type(error).__name__}: {error}")
                row = _row(sample, method, result, config, time.perf_counter() - began)
                traces_writer.write({"task_id": sample.task_id, "sample_id": sample.sample_id, "method": method.name,
                                     "status": result.status, "trace": result.trace})
                scores_writer.write(row)
                rows.append(row)
                if on_row is not None:
                    on_row(row)
            return rows

        stopped = threading.Event()  # set on an interrupt: workers start no further method
        pairs = [(s, m) for s in samples for m in methods if wanted(s, m)]
        todo = list({id(s): s for s, m in pairs if (*s.key, m.name) not in done}.values())
        # only this run's (sample, method) pairs: rows of other methods are kept, not counted; rows of
        # samples it does not select are set aside at the end (selected)
        resumed = sum((*s.key, m.name) in done for s, m in pairs)
        failed -= done  # a failed row written again later is done
        retried = sum((*s.key, m.name) in failed for s, m in pairs)
        input_notes = [*loading_notes, *sample_notes(samples, config)]
        if on_note is not None:  # what is known about the input now, not after the long part
            for note in input_notes:
                on_note(note)
        if on_start is not None:
            on_start(len(pairs) - resumed, resumed)
        try:
            with ThreadPoolExecutor(max_workers=config.parallel_samples) as pool:
                # each worker in the caller's context: its row errors word options as the caller
                # does (workbench.option_words: config keys under workbench run)
                futures = [pool.submit(contextvars.copy_context().run, work, sample) for sample in todo]
                try:
                    for future in as_completed(futures):
                        written += len(future.result())
                except BaseException as stop:
                    for future in futures:
                        future.cancel()
                    stopped.set()
                    if llm is not None:
                        llm.stop()  # no new request or retry; the calls in flight finish and are cached
                    if isinstance(stop, KeyboardInterrupt):
                        _wait_for_samples_in_flight(futures, llm, on_wait)
                    raise
        except BaseException as stop:
            # run.json must not say "running" for a run that ended here (the rows so far are kept below)
            status = "interrupted" if isinstance(stop, KeyboardInterrupt) else "failed"
            atomic_write(run_path, json.dumps({"config": record, "options": options,
                                               "status": status}, indent=2))
            raise
        finally:
            scores_writer.close()
            traces_writer.close()
            if cache is not None:
                cache.close()
            # also after an interrupt or a configuration error: the rows written so far stay usable,
            # and a row scored again (--retry-failed) replaces its error row in scores.jsonl
            set_aside = keep_current_rows(scores_path, refresh=_carried_now(samples) if config.resume else None,
                                          selected=selected if config.resume else None)
            write_wide_table(scores_path, out / WIDE_SCORES_FILE, ROW_COLUMNS, order=input_order(samples))
        wall = time.perf_counter() - started
        # the rows an earlier resume set aside that stay there (not moved by this run)
        stay_aside = len(read_jsonl(unselected_path(scores_path))) - set_aside if config.resume else 0
        usage = llm.usage if llm is not None else Usage()
        capacity = wall * min(config.parallel_samples, max(1, len(todo)))
        # the verdict and the table are the folder's (as ``workbench execute --resume`` counts its
        # whole results file): a resumed run that scored only failures still holds usable rows
        rows_now = read_jsonl(scores_path)
        statuses, mean_scores, score_reads = summarise_rows(rows_now, methods)
        report = RunReport(
            rows_written=written,
            resumed_rows=resumed,
            retried_rows=retried,
            set_aside_rows=set_aside,
            statuses=statuses,
            mean_scores=mean_scores,
            score_reads=score_reads,
            read_issues=read_issues(rows_now),
            failure_reasons=failure_reasons(rows_now),
            usage=usage.as_dict(),
            wall_seconds=wall,
            llm_seconds=usage.llm_seconds,
            outside_llm_share=(max(0.0, 1.0 - usage.llm_seconds / capacity) if capacity > 0 else None),
            paths={"scores": str(scores_path), "scores_wide": str(out / WIDE_SCORES_FILE), "traces": str(traces_path),
                   "run": str(run_path)},
            config=record,
            notes=[*input_notes, *_set_aside_note(set_aside, stay_aside)],
            announced_notes=len(input_notes) if on_note is not None else 0,
        )
        report.failures = failure_verdict(report.statuses, config).as_dict()
        # announced_notes is how this invocation printed its notes, not what the run is
        recorded = {key: value for key, value in asdict(report).items() if key != "announced_notes"}
        # the output files as run.json names them: inside a workbench run folder relative to it
        recorded["paths"] = {name: shown_path(path, run_dir) for name, path in report.paths.items()}
        atomic_write(run_path, json.dumps({**recorded, "options": options, "status": "finished"},
                                          indent=2, default=str))
        return report
    finally:
        lock.release()


def summarise_rows(
    rows: Iterable[dict[str, Any]], methods: list[ScoringMethod]
) -> tuple[dict[str, dict[str, int]], dict[str, float | None], dict[str, dict[str, int]]]:
    """Count a run folder's ``scores.jsonl`` rows per method: what :class:`RunReport` reports.

    Args:
        rows: the folder's current rows (after :func:`~workbench.score.wide_table.keep_current_rows`),
            from this invocation and any earlier one it resumed.
        methods: this run's methods; each gets an entry (in this order) even without rows, and the
            LLM ones a ``score_reads`` entry. Methods of earlier runs found in ``rows`` follow.

    Returns:
        ``(statuses, mean_scores, score_reads)``: method -> status -> count; method -> mean
        score of its ``ok`` rows (``None`` when it has none); method -> how its ``ok`` rows
        were read -> count (methods whose rows record a ``score_read``).
    """
    statuses: dict[str, Counter] = {m.name: Counter() for m in methods}
    reads: dict[str, Counter] = {m.name: Counter() for m in methods if m.uses_llm}
    values: dict[str, list[float]] = {m.name: [] for m in methods}
    for row in rows:
        name = row["method"]
        statuses.setdefault(name, Counter())[row["status"]] += 1
        values.setdefault(name, [])
        if row["status"] == "ok" and row.get("score") is not None:
            values[name].append(row["score"])
            if row.get("score_read") is not None:
                reads.setdefault(name, Counter())[row["score_read"]] += 1
    return ({name: dict(counter) for name, counter in statuses.items()},
            {name: (statistics.fmean(v) if v else None) for name, v in values.items()},
            {name: dict(counter) for name, counter in reads.items()})


#: the attempts and seconds the LLM client appends to an error (``(3 attempts, 6.2 s in all)``, with
#: ``, 4.0 s of it waiting as the server asked (Retry-After)`` and, after it, what the server asked):
#: they differ between rows that failed for one reason
_ATTEMPTS_SUFFIX = re.compile(r"\s*\(\d+ attempts?, [\d.]+ s in all(?:, [\d.]+ s of it waiting as the server asked "
                              r"\(Retry-After\))?\)(?:; the server asked to wait [\d.]+ s \(Retry-After\), more than "
                              r"the [\d.]+ s one wait may last: run again later)?")
#: the answer a parse error quotes at its end (``... after one repair turn: 'The code ...'``):
#: one reason, whatever each model answer said
_QUOTED_ANSWER = re.compile(r""":\s*(?:'.*'|".*")\s*$""", re.DOTALL)


def failure_reasons(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The most common failure of each method among a run folder's rows.

    Args:
        rows: the folder's current ``scores.jsonl`` rows.

    Returns:
        method -> ``{"rows": failed rows (statuses in ERROR_STATUSES), "status": the most common
        failure's status, "error": the first such row's error text, "count": rows failing that
        way}``, for the methods with at least one failed row. Errors that differ only in the
        attempts and seconds the client appends, or in the answer a parse error quotes, count as one.
    """
    by_method: dict[str, Counter] = {}
    first: dict[tuple[str, str, str], str] = {}
    for row in rows:
        if row.get("status") not in ERROR_STATUSES:
            continue
        error = str(row.get("error") or "(no error text)")
        key = (row["status"], _QUOTED_ANSWER.sub("", _ATTEMPTS_SUFFIX.sub("", error)))
        by_method.setdefault(row["method"], Counter())[key] += 1
        first.setdefault((row["method"], *key), error)
    reasons = {}
    for method, counter in by_method.items():
        (status, reason), n = counter.most_common(1)[0]
        reasons[method] = {"rows": sum(counter.values()), "status": status, "error": first[(method, status, reason)],
                           "count": n}
    return reasons


def _wait_for_samples_in_flight(futures: list[Future], llm: LLMClient | None,
                                on_wait: Callable[[int, bool], None] | None) -> None:
    """After a Ctrl-C, wait for the samples in flight; a further Ctrl-C abandons their calls.

    The client is already stopped (:meth:`LLMClient.stop`): no new request or retry is sent, so
    each sample in flight ends with its current call (its answer cached; the sample's row written
    when that was its last call, else the sample is left for ``--resume``). A second Ctrl-C calls
    ``llm.stop(abandon=True)``: the waits on those calls end at once and their answers are lost.

    Args:
        futures: the run's sample futures (the queued ones already cancelled).
        llm: the run's client, or ``None`` for a run without an LLM method.
        on_wait: called with (samples still running, whether their calls are being abandoned)
            before each wait, to say why the command has not exited yet.
    """
    abandoning = False
    while True:
        in_flight = sum(future.running() for future in futures)
        if not in_flight:
            return
        if on_wait is not None:
            on_wait(in_flight, abandoning)
        try:
            wait_for_futures(futures)
            return
        except KeyboardInterrupt:
            abandoning = True
            if llm is not None:
                llm.stop(abandon=True)


def run_score(
    source: str | os.PathLike[str], config: ScoreConfig, output_dir: str | os.PathLike[str], **hooks: Any
) -> RunReport:
    """Load the samples of ``source`` and score them into ``output_dir``: what ``workbench score`` runs.

    Args:
        source: a data file, folder, bundled name or hub id with the generations and references.
        config: the options (:class:`~workbench.score.config.ScoreConfig`): methods, model,
            columns, which samples.
        output_dir: the run folder (``scores.jsonl``, ``scores_wide.jsonl``, ``traces.jsonl``,
            ``run.json``, ``chroma/``).
        hooks: ``on_row``, ``on_start``, ``on_wait``, ``on_note``, ``mock_response``, ``extra_llm_params``,
            ``run_dir`` of :func:`score_samples`.

    Returns:
        the :class:`RunReport` (also in ``run.json``).

    Raises:
        MissingColumnError / MissingSplitError / DataError: the data does not fit the columns;
            DataError: ``output_dir`` is under a file or cannot be written
            (:func:`workbench.io.require_output_folder`), before the data loads.
        WorkbenchError: as :func:`score_samples`.

    Example::

        from workbench import ScoreConfig, run_score

        config = ScoreConfig(method=["ice-score", "chrf"], model="local/qwen2.5-coder-0.5b",
                             generation_column="completion_multipl_e", limit=4, select="stratified")
        report = run_score("humaneval-codex-python", config, "runs/score")
        print(report.mean_scores, report.paths["scores_wide"])
    """
    reject_swapped(config, "config", ScoreConfig, output_dir, "output_dir", PATH_TYPES, "run_score(source, config, output_dir)",
                   "run_score takes its config before its output folder, unlike run_execute")
    require_argument(config, ScoreConfig, "config", "run_score(source, config, output_dir)")
    require_argument(output_dir, (str, os.PathLike), "output_dir", "run_score(source, config, output_dir)")
    require_path(source, "source", "run_score(source, config, output_dir)", hint=TABLE_HINT)
    # a file in the way of the folder, or a folder not writable: before the data loads
    require_output_folder(output_dir, f"--output {os.fspath(output_dir)}")
    if config.llm is not None and config.llm.model:
        # a mistyped model fails before the data loads (tens of seconds for a large source)
        check_model_usable(config.llm, hooks.get("extra_llm_params"), mock_response=hooks.get("mock_response"))
    notes: list[str] = []
    samples = apply_stop_sequences(select_samples(source, config, notes=notes), config.stop_sequences)
    if config.results is not None:  # verdicts on other code would be carried as these samples' `passed`
        from workbench.score.outcomes import refuse_other_code

        refuse_other_code(samples, config.results, source)
    return score_samples(samples, config, output_dir, source=source, loading_notes=notes, **hooks)


def all_reference_methods(names: Iterable[str], *, reference: bool = True) -> tuple[str, ...]:
    """Those of the methods ``names`` that use every reference of a sample: they score against each
    (:attr:`~workbench.score.base.ScoringMethod.uses_all_references`: ``chrf``) or show the judge them all
    (:attr:`~workbench.score.base.ScoringMethod.shows_all_references`), in order; unknown names are left
    out, and so is ``p-correct`` when ``reference`` is false (``--no-reference`` shows none)."""
    from workbench.score.methods import METHODS

    return tuple(name for name in names if name in METHODS
                 and (METHODS[name].uses_all_references or METHODS[name].shows_all_references)
                 and (reference or name != "p-correct"))


def select_samples(source: str | os.PathLike[str], config: ScoreConfig, *, everything: bool = False,
                   first: int | None = None, notes: list[str] | None = None,
                   loaded: LoadedDataset | None = None,
                   problem_texts: Mapping[str, ProblemTexts] | None = None) -> list[Sample]:
    """The samples of ``source`` that ``config`` scores (its columns, split, ``limit`` and
    ``select``), before ``--stop`` cuts them: :func:`load_samples` with the config's options.

    Args:
        everything: ignore ``limit`` and ``select``: every sample, in file order.
        first: with ``everything``, only the first ``first`` samples in file order. The rows after
            them are still read (here, or by the caller that read ``loaded``), and the text columns
            are checked over every row (a number in the generation column after them is refused);
            they are only not made into samples, so a (task, sample) pair repeated after them is not
            refused.
        notes: sentences for the run summary are appended here (:func:`load_samples`).
        loaded: ``source`` as already read with the config's split (:func:`load_samples`); ``None``: read it.
        problem_texts: ``config.problems`` as already read for the parts the samples take from it
            (:func:`load_samples`); ``None``: read it where they take one.

    Raises:
        MissingColumnError / MissingSplitError / DataError: as :func:`load_samples`.
    """
    return load_samples(source, Columns.of(config), split=config.split, limit=first if everything else config.limit,
                        use_prompt=not config.no_prompt, select="first" if everything else config.select,
                        stratify_column=config.stratify_column, select_seed=config.select_seed,
                        offline=config.offline, problems=config.problem_set,
                        reference_required=config.needs_reference, results=config.results, notes=notes,
                        all_reference_methods=all_reference_methods(config.method, reference=config.reference),
                        loaded=loaded, problem_texts=problem_texts)


def apply_stop_sequences(samples: list[Sample], stops: tuple[str, ...]) -> list[Sample]:
    """Cut each generation at the first of ``stops``, as ``workbench execute --stop`` cuts it
    before running it (:func:`workbench.data.stop_sequences.truncate_generation`), so the judge
    sees what was executed; the references are kept whole. The cut is recorded on the sample.

    Args:
        samples: the loaded samples.
        stops: the stop sequences (``config.stop_sequences``); none: the samples as they are.
    """
    if not stops:
        return samples
    cut_samples = []
    for sample in samples:
        cut = truncate_generation(sample.generation, stops, sample.prompt)
        cut_samples.append(dataclasses.replace(sample, generation=cut.text, stop=cut.stop))
    return cut_samples


def sample_notes(samples: list[Sample], config: ScoreConfig) -> list[str]:
    """Sentences on the samples of a run that no row may keep silent: a ``--limit`` above the
    samples there are, how many generations ``--stop`` cut, how many are null or empty (scored
    as empty code; the rows' ``generation_note``). Worded to be true before the run starts,
    when ``workbench score`` prints them (``on_note`` of :func:`score_samples`)."""
    notes = []
    if config.limit is not None and len(samples) < config.limit:
        notes.append(f"{option_value('limit', config.limit)} is above the {count(len(samples), 'sample')} the data has"
                     f"{' for ' + option_value('select', 'stratified') if config.select == 'stratified' else ''}: "
                     f"{'it is' if len(samples) == 1 else 'all of them are'} scored")
    if "p-correct" in config.method and not config.reference:
        bare = sum(not sample.prompt.strip() for sample in samples)
        if bare:
            notes.append(f"{bare} of {count(len(samples), 'sample')} {'has' if bare == 1 else 'have'} no prompt, and "
                         f"p-correct {option_value('reference', False)} shows the judge no reference either: it "
                         f"judges the code alone; give the problem with {option_named('prompt_column')} or "
                         f"{option_named('problems')}")
    if not config.no_prompt:
        note = repeated_prompt_note(((sample.prompt, sample.generation) for sample in samples), noun="generation",
                                    consequence="which the judge and the metrics see after the prompt a second time",
                                    remedy=option_set("no_prompt"))
        if note:
            notes.append(note)
    if config.problems is not None and samples and not any(sample.from_problems for sample in samples):
        notes.append(f"{option_value('problems', config.problems)} is not used: the data has its own prompt and reference "
                     f"columns, and a data column wins")
    if config.stop:
        cut = sum(sample.stop is not None for sample in samples)
        notes.append(f"{cut} of {count(len(samples), 'generation')} {'is' if cut == 1 else 'are'} cut at a stop sequence ({option_named('stop')}) before scoring; "
                     f"their rows say generation_truncated and stop_sequence")
    several = [len(sample.references) for sample in samples if len(sample.references) > 1]
    every = all_reference_methods(config.method, reference=config.reference)
    if several and every:
        from workbench.score.methods import METHODS

        best = [name for name in every if METHODS[name].uses_all_references]
        shown = [name for name in every if name not in best]
        counts = f"{min(several)}" if min(several) == max(several) else f"{min(several)} to {max(several)}"
        ways = ([f"{' and '.join(best)} {'scores' if len(best) == 1 else 'score'} each against all of them "
                 "(the best reference's score)"] if best else []) + (
                [f"{', '.join(shown)} {'shows' if len(shown) == 1 else 'show'} the judge all of them in one prompt, "
                 "as numbered alternatives"] if shown else [])
        notes.append(f"{len(several)} of {count(len(samples), 'sample')} {'has' if len(several) == 1 else 'have'} "
                     f"several references ({counts}): {'; '.join(ways)}")
    null = sum(sample.generation_null for sample in samples)
    empty = sum(not sample.generation_null and not sample.generation.strip() for sample in samples)
    if null or empty:
        notes.append(f"{null} null and {empty} empty {'generation' if empty == 1 else 'generations'} of {len(samples)} "
                     "are scored as empty code; "
                     f"their rows say why in generation_note")
    return notes


#: :attr:`RunReport.read_issues` keys: why rows fell back to their sampled answers
FALLBACK_NONE_RETURNED = "no log-probabilities returned"
FALLBACK_UNREADABLE = "log-probabilities returned but no allowed token among them"


def read_issues(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Count the ``ok`` rows whose read needs the user's attention, per method
    (:attr:`RunReport.read_issues`): fallbacks by their reason, and expected-mode reads with
    a low probability mass (their ``read_note`` starts with :data:`LOW_MASS_NOTE`).

    Returns:
        method -> issue -> count; methods without any are left out.
    """
    issues: dict[str, Counter] = {}
    for row in rows:
        if row.get("status") != "ok":
            continue
        if row.get("score_read") == READ_FALLBACK:
            # the note's earlier wording (before log-probabilities above 0 were refused), in resumed folders
            none_returned = row.get("read_note") in (NO_LOGPROBS, "the provider returned no token log-probabilities")
            why = FALLBACK_NONE_RETURNED if none_returned else FALLBACK_UNREADABLE
            issues.setdefault(row["method"], Counter())[why] += 1
        elif str(row.get("read_note") or "").startswith(LOW_MASS_NOTE):
            issues.setdefault(row["method"], Counter())[LOW_MASS_NOTE] += 1
    return {name: dict(counter) for name, counter in issues.items()}


def fallback_notes(report: RunReport) -> list[str]:
    """One sentence per LLM method some of whose rows were read by their sampled answers
    although ``expected`` was asked for, with the reasons, and one per method with rows whose
    probability mass on the allowed labels was low (the run summary must say so, never silently).

    Returns:
        e.g. ``["ice-score: 6 of 6 scored rows got no usable token log-probabilities (6 no
        log-probabilities returned); their score is the mean of n_samples answers sampled at the
        run's temperature (score_read=sampled-fallback)"]``.
    """
    notes = []
    for name, counts in report.score_reads.items():
        scored = sum(counts.values())
        issues = report.read_issues.get(name, {})
        fallback = counts.get(READ_FALLBACK, 0)
        if fallback:
            why = "; ".join(f"{issues[key]} {key}" for key in (FALLBACK_NONE_RETURNED, FALLBACK_UNREADABLE)
                            if issues.get(key))
            notes.append(
                f"{name}: {fallback} of {scored} scored rows got no usable token log-probabilities"
                + (f" ({why})" if why else "")
                + f"; their score is the mean of n_samples answers sampled at the run's temperature "
                f"(score_read={READ_FALLBACK}, the reason in read_note)"
            )
        if issues.get(LOW_MASS_NOTE):
            notes.append(
                f"{name}: {issues[LOW_MASS_NOTE]} of {scored} scored rows put less than {LOW_MASS:.0%} of the answer "
                f"token's probability on the allowed labels, so their score comes from a small tail (the model "
                f"mostly began its answer with something else; score_mass and read_note say so per row)"
            )
    return notes


def _lock_run_folder(out: Path):
    """Take the run folder's lock (an OS file lock, released when the process ends, even by SIGKILL).

    Raises:
        WorkbenchError: another run holds it (the advice names the way around it of the command that
            runs this one: :func:`~workbench.option_words.other_output_advice`).
    """
    return lock_exclusively(out / LOCK_FILE, f"another workbench score run is using {out}; wait for it to finish "
                                              f"(or stop it), or {other_output_advice()}")


def _open_storage(config: ScoreConfig, out: Path):
    from workbench.score.embeddings import check_embedder, make_embedder
    from workbench.score.storage import SemanticStorage

    llm = config.llm
    retries = {"max_retries": llm.max_retries, "retry_wait_s": llm.retry_wait_s, "timeout_s": llm.timeout_s} if llm else {}
    embedder = make_embedder(config.embedding_model, config.embedding_api_base, **retries)
    check_embedder(embedder)  # a model that never answers stops the run here, not as one llm_error per sample
    if config.chroma_host:
        return SemanticStorage.http(config.chroma_host, config.chroma_port, embedder)
    return SemanticStorage.persistent(out / "chroma", embedder)


def _set_aside_note(rows: int, staying: int = 0) -> list[str]:
    """The sentence on the finished rows a resumed run set aside (``rows``, moved by this run)
    and on those an earlier resume set aside that stay there (``staying``); none without either.
    A second resume at the same smaller limit moves nothing, so it must not say it set rows aside."""
    if not rows and not staying:
        return []
    # under workbench run, the limits are config keys and resuming is the run's own doing
    limits = f"{option_named('limit')} or {option_named('method_limit')}"
    resume = option_named("resume", plain="resume")
    if rows:
        note = (f"{count(rows, 'finished row')} of samples this run does not select (a smaller {limits}) "
                f"{'is' if rows == 1 else 'are'} set aside in {UNSELECTED_FILE}"
                + (f", beside the {staying} an earlier {resume} put there" if staying else "")
                + ", out of the tables")
    else:
        note = (f"{count(staying, 'finished row')} of samples this run does not select {'stays' if staying == 1 else 'stay'} "
                f"set aside in {UNSELECTED_FILE}, where an earlier {resume} put {'it' if staying == 1 else 'them'}, "
                "out of the tables")
    them = "it" if rows + staying == 1 else "them"
    return [note + f"; a {resume} that selects {them} again takes {them} back without scoring"]


def _carried_now(samples: list[Sample]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """How a kept ``scores.jsonl`` row of ``samples`` takes the carried columns the samples hold
    now (a resume with another ``carry``: the pipeline's ``[correlate] metric`` adds a shipped
    column to both score tables), its scores left as they are; other rows stay as they are
    (:func:`~workbench.score.wide_table.keep_current_rows`)."""
    by_key = {sample.key: sample for sample in samples}
    own = {*ROW_COLUMNS, *SAMPLE_COLUMNS}

    def refresh(row: dict[str, Any]) -> dict[str, Any]:
        sample = by_key.get(row_key(row))
        if sample is None:
            return row
        kept = {column: value for column, value in row.items() if column in own}
        fresh = {**kept, **{column: value for column, value in sample.carried.items() if column not in kept}}
        return row if fresh == row else fresh

    return refresh


def _row(sample: Sample, method: ScoringMethod, result: MethodResult, config: ScoreConfig, seconds: float) -> dict[str, Any]:
    usage = result.usage
    row = {
        "task_id": sample.task_id,
        "sample_id": sample.sample_id,
        "method": method.name,
        "model": config.model if method.uses_llm else None,
        "score": result.score,
        "scores": result.scores,
        "score_spread": result.spread,
        "scale_min": method.scale[0],
        "scale_max": method.scale[1],
        "status": result.status,
        "error": result.error,
        "subcodes": result.subcodes,
        "reference_subcodes": result.reference_subcodes,
        "parse_failures": result.parse_failures,
        "truncated_answers": usage.truncated_answers,
        "llm_calls": usage.calls,
        "cache_hits": usage.cache_hits,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "tokens": usage.tokens,
        "cost_usd": usage.cost_usd,
        "seconds": round(seconds, 4),
        "llm_seconds": round(usage.llm_seconds, 4),
        # per answer that asked for a wait (429/503 with Retry-After): what it asked, what was waited
        "retry_after": [dict(ask) for ask in usage.retry_after] or None,
        # the form the sample was shown: a sample with several references has its own prompt version
        "prompt_version": method.prompt_version_for(sample) or None,
        "variant": method.variant or None,
        "model_identity": config.llm.identity if method.uses_llm else None,
        # the references the judge was shown (chrf: scored against); 0 without one
        "references_shown": len(method.references_shown(sample)),
        **(result.read.columns() if result.read is not None else dict.fromkeys(READ_COLUMNS)),
    }
    if method.uses_llm and result.read is None:
        row["score_mode"] = config.score_mode  # asked for, even when the sample failed before a read
    row.update(generation_truncated=sample.stop is not None, stop_sequence=sample.stop,
               generation_note=sample.generation_note, code_sha256=sample.code_digest)
    for column, value in sample.carried.items():
        row.setdefault(column, value)
    return row
