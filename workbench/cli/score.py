"""``workbench score``: score generated programs against references (DSA-CQE and baselines).

This module only parses options and prints; the work is :mod:`workbench.score.job`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from workbench.cli.app import NOTE, app, console, err_console, exit_with_verdict
from workbench.cli.config_options import config_options, resume_command
from workbench.cli.interrupts import interrupted_by, interrupted_status, interrupted_word
from workbench.formatting import count
from workbench.score.config import ScoreConfig


def _print_note(note: str) -> None:
    """One note of a run on stderr."""
    err_console.print(f"{NOTE} {escape(str(note))}")


@contextmanager
def progress_hooks(enabled: bool = True, cache: str = "rw") -> Iterator[dict[str, Callable]]:
    """``on_row`` / ``on_start`` for :func:`run_score` that draw a progress bar on stderr, ``on_wait``
    that says why an interrupted run has not exited yet (``cache``: the run's ``--cache`` mode, for
    whether the answers in flight are stored), and ``on_note`` that prints the notes on the input
    before scoring starts (:func:`print_report` prints the others)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, disable=not enabled) as progress:
        # named for what it waits on: until the samples are known it is the loading (which may fail)
        bar = progress.add_task("loading the data", total=None)
        yield {
            "on_row": lambda row: progress.advance(bar),
            # a resumed run starts at the rows already done
            "on_start": lambda todo, done: progress.update(bar, description="scoring", total=todo + done,
                                                          completed=done),
            "on_wait": lambda in_flight, abandoning: _say_waiting(in_flight, abandoning, cache),
            "on_note": _print_note,
        }


def _say_waiting(in_flight: int, abandoning: bool, cache: str = "rw") -> None:
    """Why an interrupted ``score`` has not exited yet (``on_wait`` of :func:`run_score`; under
    ``workbench run`` in its config words, :mod:`workbench.option_words`). ``cache``: the ``--cache``
    mode; the answers in flight are said to be cached only where it stores answers (``rw``,
    ``refresh``)."""
    from rich.markup import escape

    from workbench.llm.cache import CacheMode
    from workbench.option_words import option_named, option_value, resume_advice

    if abandoning:
        err_console.print(f"[yellow]Interrupted again:[/yellow] abandoning the calls of the "
                          f"{count(in_flight, 'sample')} in flight; {'it is' if in_flight == 1 else 'they are'} left unscored: "
                          f"{resume_advice()} to score them.", highlight=False, soft_wrap=True)
        return
    # with the cache off or read-only nothing is stored: a resumed run asks those calls again
    stored = ("Each answer is cached; a" if CacheMode(cache).writes
              else f"The answers are not cached ({option_value('cache', cache)}); a")
    said = (f"no new LLM call is made; waiting for the {count(in_flight, 'sample')} in flight "
            f"to finish {'its' if in_flight == 1 else 'their'} current call (at most {option_named('timeout')} seconds). "
            f"{stored} sample that is complete is kept, the others are left to resume: {resume_advice()}. "
            f"{interrupted_by()} again abandons the calls in flight.")
    # escaped: in config words an option is "[score] cache", which is not markup
    err_console.print(f"[yellow]{interrupted_word()}:[/yellow] {escape(said)}", highlight=False, soft_wrap=True)


@app.command("score", short_help="Score generations against references with LLM judges or chrF.")
@config_options(ScoreConfig, extra_flags={"method": ("-m",), "language": ("-l",), "workers": ("-j",)})
def score_command(
    config: ScoreConfig,
    data: str = typer.Argument(..., help="Generations: a .jsonl/.json/.parquet/.csv file, a folder, a bundled name or a hub id."),
    output: Path = typer.Option(Path("score-out"), "--output", "-o", help="Run folder: scores.jsonl, scores_wide.jsonl (one column per method: what correlate reads), traces.jsonl, run.json, chroma/."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar on stderr."),
    quiet: bool = typer.Option(False, "--quiet", "-q", hidden=True, help="Deprecated: use --no-progress."),
) -> None:
    """Score generations against references with DSA-CQE, its simplified form, ICE-Score (functional correctness; its usefulness aspect: ice-score-usefulness), p-correct (P(Yes)) and chrF.

    Exit status: 0 ok; 1 error (configuration, data); 2 bad command line; 3 a method produced no
    usable row (e.g. every row llm_error); 4 a method's failed rows (llm_error, parse_error,
    budget_exceeded, error) above --max-failures; 130 interrupted (143 by SIGTERM).
    """
    if config.uses_embeddings:
        from workbench.score.embeddings import check_embedding_model_usable

        # dsa-cqe's Semantic Storage opens at its first sub-code, after the data load and the first
        # LLM calls: a missing embedding model is said here, in one line, instead (before the LLM's
        # check, which imports litellm for a local model that is there)
        check_embedding_model_usable(config.embedding_model)
    if config.llm is not None and config.llm.model:
        from workbench.llm.client import check_model_usable

        # before the scoring machinery and the data load (tens of seconds each): a model that cannot
        # be called (an unknown alias, a file that is not GGUF, a missing API key, a model not in the
        # store that may not be pulled) is one line at once
        check_model_usable(config.llm)
    from workbench.score.job import run_score

    if quiet:
        err_console.print("note: --quiet/-q is deprecated and goes in the next release: use --no-progress "
                          "(one name per option across commands)")
    try:
        with progress_hooks(progress and not quiet, cache=str(config.cache)) as hooks:
            report = run_score(data, config, output, **hooks)
    except KeyboardInterrupt:
        again = resume_command("score", data, config, {"--output": str(output)})
        err_console.print(f"[yellow]{interrupted_word()}.[/yellow] The rows scored so far are kept in "
                          f"{output / 'scores.jsonl'}; continue with:", highlight=False, soft_wrap=True)
        err_console.print(again, markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(interrupted_status()) from None
    print_report(report, str(config.cache))
    exit_with_verdict(report.failures)


#: how a ``score_read`` value reads on the terminal (values of workbench.score.reading)
_READ_WORDS = {
    "expected": "as the probability-weighted score (token log-probabilities)",
    "sampled": "as the written answer",
    "sampled-fallback": "as the mean of sampled answers (no usable log-probabilities: see the note)",
}


def print_report(report: Any, cache: str = "rw") -> None:
    """The per-method table and how the LLM scores were read (and any fallback), over every
    row of the run folder (a resumed run included), the notes not printed before the run
    (``report.announced_notes``), each method's most common failure, then this invocation's LLM
    accounting. ``cache`` is the run's ``--cache`` mode (whether a retry of a parse error would
    replay the cached answer). How to score the failed rows again and refresh the cache is
    worded by :func:`workbench.option_words.retry_failed_advice`: ``workbench run`` prints
    within its stage's config words, and says its own ``--retry-failed``."""
    from workbench.option_words import retry_failed_advice
    from workbench.score.job import fallback_notes

    table = Table(title="workbench score: every row of the run folder")
    table.add_column("method", overflow="fold")
    # the statuses' names, broken at their underscore, so that the table is whole at 80 columns (a pipe)
    for column in ("rows", "ok", "llm_\nerror", "parse_\nerror", "budget_\nexceeded", "other", "mean\nscore"):
        table.add_column(column, justify="right", no_wrap=True)
    for name, counts in report.statuses.items():
        known = sum(counts.get(s, 0) for s in ("ok", "llm_error", "parse_error", "budget_exceeded"))
        mean = report.mean_scores.get(name)
        table.add_row(
            name, str(sum(counts.values())), str(counts.get("ok", 0)), str(counts.get("llm_error", 0)),
            str(counts.get("parse_error", 0)), str(counts.get("budget_exceeded", 0)),
            str(sum(counts.values()) - known), "-" if mean is None else f"{mean:.3f}",
        )
    console.print(table)
    for name, counts in report.score_reads.items():
        if counts:
            reads = ", ".join(f"{n} {_READ_WORDS.get(how, how)}" for how, n in sorted(counts.items()))
            console.print(f"{name}: {count(sum(counts.values()), 'score')} read: {reads}")
    skipped = [f"{name}: {count(counts['skipped'], 'row')} skipped, not scored (the row's error says why, e.g. an empty "
               f"reference; counted under 'other')" for name, counts in report.statuses.items() if counts.get("skipped")]
    for note in [*report.notes[report.announced_notes:], *skipped, *fallback_notes(report)]:
        _print_note(note)
    # the counts alone do not say why (a server answering 500, a wrong key, unparsable answers)
    for name, reason in report.failure_reasons.items():
        error = reason["error"] if len(reason["error"]) <= 400 else reason["error"][:400] + " ..."
        err_console.print(f"[yellow]{escape(name)}:[/yellow] {count(reason['rows'], 'failed row')}; the most common "
                          f"error ({reason['count']} of them, {reason['status']}): {escape(error)}",
                          highlight=False)
    if report.failure_reasons:
        # parse errors are real answers and cached: a plain retry would replay them
        parse = (any(r["status"] == "parse_error" for r in report.failure_reasons.values())
                 and cache not in ("off", "refresh"))
        retry_with = retry_failed_advice()
        err_console.print(f"{report.paths['scores']} has every row's error; after fixing the cause, {escape(retry_with[0])}"
                          + (f" ({escape(retry_with[1])} to ask again where the answer did not parse: parse errors are "
                             "cached answers)" if parse else ""), highlight=False)
    usage = report.usage
    share = "-" if report.outside_llm_share is None else f"{report.outside_llm_share:.1%}"
    console.print(
        f"this invocation: LLM {count(usage['calls'], 'call')}, {count(usage['cache_hits'], 'cache hit')}, "
        f"{count(usage['tokens'], 'token')} "
        f"({usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion), ${usage['cost_usd']:.4f}"
        + (f" ({count(usage['unpriced_calls'], 'call')} not in litellm's cost map)" if usage["unpriced_calls"] else "")
        # rate-limited APIs: how long the servers' Retry-After held the calls (absent from older reports)
        + (f"; {usage['retry_after_wait_s']:.1f} s waited as servers asked (Retry-After)"
           if usage.get("retry_after_wait_s") else "")
    )
    console.print(
        f"{count(report.rows_written, 'row')} written, {report.resumed_rows} already done; wall {report.wall_seconds:.1f} s, "
        f"in LLM calls {report.llm_seconds:.1f} s (summed over the concurrent workers), the busy workers' time "
        f"outside LLM calls {share}"
    )
    console.print(f"scores: {report.paths['scores']}  for correlate: {report.paths['scores_wide']}  "
                  f"traces: {report.paths['traces']}  report: {report.paths['run']}")
