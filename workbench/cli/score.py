"""``workbench score``: score generated programs against references (DSA-CQE and baselines).

This module only parses options and prints; the work is :mod:`workbench.scoring.run`.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from workbench.cli.app import app, console, err_console


def _default_cache_dir() -> str:
    import platformdirs

    return str(Path(platformdirs.user_cache_dir("workbench")) / "llm")


@app.command("score")
def score_command(
    data: str = typer.Argument(..., help="Generations: a .jsonl/.json/.parquet/.csv file, a folder, a bundled name or a hub id."),
    method: list[str] = typer.Option(["dsa-cqe"], "--method", "-m", help="dsa-cqe, dsa-cqe-simplified, ice-score, chrf; repeat for several."),
    model: str | None = typer.Option(None, "--model", help="Any litellm model (gpt-4o-mini, ollama/..., openai/NAME with --api-base) or local/ALIAS."),
    output: Path = typer.Option(Path("score-out"), "--output", "-o", help="Run folder: scores.jsonl, traces.jsonl, run.json, chroma/."),
    api_base: str | None = typer.Option(None, "--api-base", help="Endpoint of an OpenAI-compatible server (vLLM, llama.cpp)."),
    task_column: str = typer.Option("task_id", "--task-column"),
    sample_column: str = typer.Option("sample_id", "--sample-column", help="Row position when the data has no such column."),
    generation_column: str = typer.Option("generation", "--generation-column", help="For the ICE-Score file use completion_multipl_e."),
    reference_column: str = typer.Option("reference", "--reference-column"),
    prompt_column: str | None = typer.Option(None, "--prompt-column", help="Default: 'prompt' when present; generation and reference then complete it."),
    no_prompt: bool = typer.Option(False, "--no-prompt", help="Ignore the prompt column: generation and reference are whole programs."),
    carry: list[str] | None = typer.Option(None, "--carry", help="Input columns copied into each row (default: passed, when present)."),
    split: str | None = typer.Option(None, "--split", help="Only this split."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Score only N samples (see --select)."),
    select: str = typer.Option("first", "--select", help="Which N samples: first (file order) or stratified (spread over tasks and pass/fail)."),
    stratify_column: str = typer.Option("passed", "--stratify-column", help="Outcome column (0/1 or pass ratio) for --select stratified."),
    select_seed: int = typer.Option(0, "--select-seed", min=0, help="Seed of --select stratified."),
    language: str = typer.Option("python", "--language", "-l", help="Language plugin of the programs."),
    n_samples: int = typer.Option(1, "--n-samples", min=1, help="Repeat the final scoring call k times; the score is the mean, the spread is reported."),
    max_subcodes: int = typer.Option(16, "--max-subcodes", min=1, help="DSA-CQE: most sub-codes analysed per program."),
    k_nearest: int = typer.Option(3, "--k-nearest", min=0, help="DSA-CQE: nearest storage records retrieved per sub-code."),
    temperature: float = typer.Option(0.2, "--temperature", help="Sampling temperature (DSA-CQE reported 0.2)."),
    max_tokens: int = typer.Option(768, "--max-tokens", min=16),
    seed: int = typer.Option(0, "--seed"),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds per LLM call before it is abandoned and retried."),
    retries: int = typer.Option(2, "--retries", min=0, help="Retries of a transient LLM failure (backoff with jitter)."),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1, help="Samples in parallel and LLM calls in flight (default 4; 1 for local/ models)."),
    max_cost: float | None = typer.Option(None, "--max-cost", min=0.0, help="Budget in USD (litellm's local cost map); later samples get budget_exceeded."),
    structured: str = typer.Option("json_schema", "--structured", help="json_schema, json_object or off (answers are validated in every case)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="LLM response cache (default: the user cache folder)."),
    cache: str = typer.Option("rw", "--cache", help="rw, ro, refresh or off."),
    embedding_model: str | None = typer.Option(None, "--embedding-model", help="Default: offline all-MiniLM-L6-v2; or any litellm embedding model."),
    embedding_api_base: str | None = typer.Option(None, "--embedding-api-base"),
    chroma_host: str | None = typer.Option(None, "--chroma-host", help="Use a Chroma server instead of the embedded store."),
    chroma_port: int = typer.Option(8000, "--chroma-port"),
    keep_storage: bool = typer.Option(False, "--keep-storage", help="Keep each program's Chroma collection."),
    prompts_dir: Path | None = typer.Option(None, "--prompts-dir", help="Your own prompt templates (same file names as prompts/)."),
    resume: bool = typer.Option(False, "--resume", help="Continue a run: samples already in scores.jsonl are not scored again."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="With --resume: score rows with an error status again."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the results in an existing run folder."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Score generations against references with DSA-CQE, its simplified form, ICE-Score and chrF."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from workbench.llm.cache import CacheMode
    from workbench.llm.client import LLMSettings
    from workbench.scoring.methods import METHODS
    from workbench.scoring.run import Columns, ScoreConfig, load_samples, score_samples

    try:
        cache_mode = CacheMode(cache)
    except ValueError:
        raise typer.BadParameter("must be rw, ro, refresh or off", param_hint="--cache") from None
    unknown = [m for m in method if m not in METHODS]
    if unknown:
        raise typer.BadParameter(f"unknown method {unknown[0]!r}; choose from {', '.join(METHODS)}", param_hint="--method")
    uses_llm = any(METHODS[m].uses_llm for m in method)
    if uses_llm and not model:
        raise typer.BadParameter("an LLM method needs --model (e.g. local/qwen2.5-coder-0.5b or gpt-4o-mini)", param_hint="--model")
    workers = concurrency or (1 if model and model.startswith("local/") else 4)
    settings = None
    if uses_llm:
        try:
            settings = LLMSettings(
                model=model, api_base=api_base, temperature=temperature, max_tokens=max_tokens, seed=seed,
                timeout_s=timeout, max_retries=retries, concurrency=workers, max_cost_usd=max_cost, structured=structured,
            )
        except ValueError as error:
            raise typer.BadParameter(str(error)) from None
    samples = load_samples(
        data,
        Columns(task=task_column, sample=sample_column, generation=generation_column, reference=reference_column,
                prompt=prompt_column, carry=tuple(carry) if carry else None),
        split=split, limit=limit, use_prompt=not no_prompt,
        select=select, stratify_column=stratify_column, select_seed=select_seed,
    )
    config = ScoreConfig(
        methods=list(method), output_dir=output, llm=settings,
        cache_dir=None if cache_mode is CacheMode.OFF else (cache_dir or _default_cache_dir()), cache_mode=cache_mode,
        language=language, n_samples=n_samples, max_subcodes=max_subcodes, k_nearest=k_nearest,
        embedding_model=embedding_model, embedding_api_base=embedding_api_base, chroma_host=chroma_host,
        chroma_port=chroma_port, keep_storage=keep_storage, resume=resume, retry_failed=retry_failed,
        overwrite=overwrite, workers=workers, prompts_dir=str(prompts_dir) if prompts_dir else None,
    )
    total = len(samples) * len(dict.fromkeys(method))
    with Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, disable=quiet) as progress:
        bar = progress.add_task("score", total=total)
        report = score_samples(
            samples, config, on_row=lambda row: progress.advance(bar),
            # a resumed run starts at the rows already done
            on_start=lambda todo, done: progress.update(bar, total=todo + done, completed=done),
        )
    _print_report(report)


def _print_report(report) -> None:
    table = Table(title="workbench score")
    for column in ("method", "rows", "ok", "llm_error", "parse_error", "budget_exceeded", "other", "mean score"):
        table.add_column(column)
    for name, counts in report.statuses.items():
        known = sum(counts.get(s, 0) for s in ("ok", "llm_error", "parse_error", "budget_exceeded"))
        mean = report.mean_scores.get(name)
        table.add_row(
            name, str(sum(counts.values())), str(counts.get("ok", 0)), str(counts.get("llm_error", 0)),
            str(counts.get("parse_error", 0)), str(counts.get("budget_exceeded", 0)),
            str(sum(counts.values()) - known), "-" if mean is None else f"{mean:.3f}",
        )
    console.print(table)
    usage = report.usage
    share = "-" if report.outside_llm_share is None else f"{report.outside_llm_share:.1%}"
    console.print(
        f"LLM: {usage['calls']} calls, {usage['cache_hits']} cache hits, {usage['tokens']} tokens "
        f"({usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion), ${usage['cost_usd']:.4f}"
        + (f" ({usage['unpriced_calls']} calls not in litellm's cost map)" if usage["unpriced_calls"] else "")
    )
    console.print(
        f"{report.rows_written} rows written, {report.resumed_rows} already done; wall {report.wall_seconds:.1f} s, "
        f"in LLM calls {report.llm_seconds:.1f} s, outside LLM calls {share}"
    )
    console.print(f"scores: {report.paths['scores']}  for correlate: {report.paths['scores_wide']}  "
                  f"traces: {report.paths['traces']}  report: {report.paths['run']}")
