"""``workbench dedup``: options and printing only; the work is :func:`workbench.dedup.run_dedup`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from workbench.cli.app import app, console, err_console
from workbench.dedup import DedupConfig, render_report, run_dedup
from workbench.errors import WorkbenchError


def _weights(text: str) -> tuple[float, float]:
    try:
        fp, fn = (float(x) for x in text.split(","))
    except ValueError as error:
        raise WorkbenchError(f"--lsh-weights must be two numbers 'FP,FN' that sum to 1 (e.g. 0.1,0.9), not {text!r}") from error
    return fp, fn


@contextmanager
def _progress_bars(enabled: bool) -> Iterator[Callable]:
    if not enabled:
        yield None
        return
    with Progress(
        TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=False,
    ) as bars:

        @contextmanager
        def factory(description: str, total: int):
            task = bars.add_task(description, total=total)
            yield lambda n: bars.advance(task, n)
            bars.update(task, completed=total)

        yield factory


@app.command("dedup")
def dedup_command(
    source: str = typer.Argument(..., help="Data file (.jsonl/.json/.parquet/.csv[.gz]), folder, bundled name or hub id."),
    code_column: str = typer.Option("content", "--code-column", help="Column with the code; several comma-separated columns are joined."),
    id_column: Optional[str] = typer.Option(None, "--id-column", help="Unique id column, or comma-separated columns joined with ':' [default: 'id' if present, else <split>/<row>]."),
    split_column: Optional[str] = typer.Option(None, "--split-column", help="Column naming each row's split (one table with several splits)."),
    split: Optional[list[str]] = typer.Option(None, "--split", help="Only these splits (repeatable)."),
    language: str = typer.Option("python", "--language", help="Language of rows without a 'language' column value."),
    group_column: Optional[str] = typer.Option(None, "--group-column", help="Never merge rows of different groups (e.g. task_id); cross-group duplicates are reported."),
    min_tokens: int = typer.Option(20, "--min-tokens", help="Files with fewer identifier/literal tokens are reported as too short."),
    set_threshold: float = typer.Option(0.8, "--set-threshold", "--t0", help="Minimum set Jaccard (Allamanis 2019)."),
    multiset_threshold: float = typer.Option(0.7, "--multiset-threshold", "--t1", help="Minimum multiset Jaccard (Allamanis 2019)."),
    num_perm: int = typer.Option(128, "--num-perm", help="MinHash permutations."),
    lsh_threshold: float = typer.Option(0.6, "--lsh-threshold", help="Jaccard the LSH bands/rows are tuned for (below --t0 for recall)."),
    lsh_weights: str = typer.Option("0.1,0.9", "--lsh-weights", help="False-positive,false-negative weights of the band/row tuning."),
    lsh_bands: Optional[int] = typer.Option(None, "--lsh-bands", help="Explicit LSH bands (with --lsh-rows)."),
    lsh_rows: Optional[int] = typer.Option(None, "--lsh-rows", help="Explicit LSH rows per band (with --lsh-bands)."),
    seed: int = typer.Option(1, "--seed", min=0, max=2**32 - 1, help="MinHash permutation seed."),
    keep: str = typer.Option("first", "--keep", help="Which file of a cluster stays: first | longest | train-first."),
    cross_set: str = typer.Option("remove-test", "--cross-set", help="Train/test clusters: remove-test (unbiased test) | remove-train."),
    train_split: str = typer.Option("train", "--train-split", help="Name of the training split."),
    test_split: str = typer.Option("test", "--test-split", help="Name of the test split."),
    against: Optional[str] = typer.Option(None, "--against", help="Reference dataset: drop rows that are near-duplicates of any of its rows (e.g. humaneval)."),
    against_code_column: Optional[str] = typer.Option(None, "--against-code-column", help="Code column(s) of --against [default: prompt,canonical_solution for HumanEval-like data, else --code-column]."),
    against_id_column: Optional[str] = typer.Option(None, "--against-id-column", help="Id column of --against [default: task_id if present]."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Folder for clusters.json, pairs.csv, removed.csv, report.json and the deduplicated splits."),
    output_format: str = typer.Option("auto", "--output-format", help="Deduplicated splits as auto (the input's form) | jsonl | parquet | hf (save_to_disk) | files (source folder)."),
    workers: int = typer.Option(0, "--workers", help="Tokenizer processes (0 = one per CPU)."),
    offline: bool = typer.Option(False, "--offline", help="Never contact the Hugging Face hub."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON instead of tables."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr."),
) -> None:
    """Find exact and near-duplicate files within and across splits (Allamanis 2019: MinHash LSH
    candidates, exact set/multiset Jaccard verification), report the duplication and write
    deduplicated splits."""
    if (lsh_bands is None) != (lsh_rows is None):
        raise WorkbenchError("give both --lsh-bands and --lsh-rows, or neither")
    config = DedupConfig(
        set_threshold=set_threshold,
        multiset_threshold=multiset_threshold,
        min_tokens=min_tokens,
        num_perm=num_perm,
        lsh_threshold=lsh_threshold,
        lsh_weights=_weights(lsh_weights),
        lsh_params=(lsh_bands, lsh_rows) if lsh_bands is not None else None,
        seed=seed,
        keep=keep,
        cross_set=cross_set,
        train_split=train_split,
        test_split=test_split,
        group_column=group_column,
        workers=workers,
    )
    with _progress_bars(progress and not json_output) as factory:
        run = run_dedup(
            source,
            code_column=code_column,
            id_column=id_column,
            split_column=split_column,
            splits=split,
            language=language,
            config=config,
            against=against,
            against_code_column=against_code_column,
            against_id_column=against_id_column,
            output_dir=output,
            output_format=output_format,
            offline=offline,
            progress=factory,
        )
    if json_output:
        typer.echo(json.dumps(run.report, indent=2, default=str))
        return
    for renderable in render_report(run.report):
        console.print(renderable)
    if run.written:
        console.print(f"Wrote {len(run.written)} outputs to {output}: " + ", ".join(Path(p).name for p in run.written.values()))
