"""``workbench languages``: the installed language plugins and their capabilities."""

from __future__ import annotations

import logging
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from workbench.cli.app import app, console, err_console
from workbench.data.text_encoding import DEFAULT_SOURCE_ENCODING
from workbench.languages import installed_plugins, plugin_problems, registry


@app.command("languages", short_help="List the language plugins, or show a file's tokens (--inspect).")
def languages_command(
    json_output: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    inspect: Path | None = typer.Option(
        None, "--inspect", metavar="FILE", help="Show what the plugin makes of FILE instead: its dedup tokens and "
        "its DSA-CQE sub-codes (kind, lines, names defined and used), without an LLM."),
    language: str | None = typer.Option(
        None, "--language", help="The language of --inspect FILE (default: by its extension)."),
    source_encoding: str = typer.Option(
        DEFAULT_SOURCE_ENCODING, "--source-encoding", help="Encoding of --inspect FILE when it is not UTF-8 and "
        "declares none (no byte-order mark or coding cookie), as for `workbench dedup`."),
) -> None:
    """List installed language plugins: versions, grammar versions, capabilities
    (tokens / decompose / execute) and missing runner toolchains, then the plugins that were
    left out (they do not import, have no hook, or clash with another) or that a command would
    refuse (their grammar does not load or lacks node types they name) with the reason; the
    exit status is 1 when there is such a problem. With --inspect FILE, show the tokens and
    sub-codes a plugin finds in FILE (for plugin authors checking their maps)."""
    if inspect is not None:
        _inspect(inspect, language, json_output, source_encoding)
        return
    # the problems are listed below: not also as the warnings every other command logs
    registry_log = logging.getLogger(registry.__name__)
    level = registry_log.level
    registry_log.setLevel(logging.ERROR)
    try:
        infos = installed_plugins()
    finally:
        registry_log.setLevel(level)
    refused = _unusable(infos)
    rows = []
    for info in infos:
        plugin = info.plugin
        missing = plugin.runner.missing_toolchain() if plugin.runner is not None else []
        problem = refused.get(plugin.name)
        rows.append(
            {
                "name": plugin.name,
                "aliases": list(plugin.aliases),
                "extensions": list(plugin.extensions),
                "distribution": info.distribution,
                "version": info.version,
                "grammar": plugin.grammar_distribution,
                "grammar_version": info.grammar_version,
                # a refused plugin can do nothing: every command that asks for it fails
                "capabilities": [] if problem else plugin.capabilities(),
                "declared_capabilities": plugin.capabilities(),
                "usable": problem is None,
                "problem": str(problem.message) if problem else None,
                "missing_toolchain": missing,
            }
        )
    problems = [*plugin_problems(), *refused.values()]
    if json_output:
        import json

        typer.echo(json.dumps(rows, indent=2))
        _print_problems(problems)
        return
    table = Table(title="Language plugins")
    # Names are what a user copies (a plugin's distribution, a grammar package): folded onto the next
    # line on a narrow terminal, never cut to "workbench…".
    for column in ("language", "aliases", "plugin", "grammar", "capabilities", "runner toolchain"):
        table.add_column(column, overflow="fold")
    for row in rows:
        toolchain = "n/a" if "execute" not in row["capabilities"] else (
            f"[red]missing: {', '.join(row['missing_toolchain'])}[/red]" if row["missing_toolchain"] else "[green]ok[/green]"
        )
        capabilities = ", ".join(row["capabilities"]) if row["usable"] else \
            f"[red]refused: a command asking for it fails (below); declares {', '.join(row['declared_capabilities'])}[/red]"
        table.add_row(
            row["name"],
            ", ".join(row["aliases"] + row["extensions"]),
            f"{row['distribution']} {row['version']}",
            f"{row['grammar']} {row['grammar_version']}" if row["grammar_version"] != "?" or not row["grammar"]
            else f"[red]{row['grammar']}: not installed[/red]",
            capabilities,
            toolchain,
        )
    console.print(table)
    _print_problems(problems)


def _unusable(infos) -> dict[str, registry.PluginProblem]:
    """The listed plugins a command would refuse, by language name: the grammar does not load, or
    does not fit the plugin (node types or fields it lacks), found the way a command finds them
    (:func:`registry.get_language`)."""
    found = {}
    for info in infos:
        try:
            registry.get_language(info.plugin.name)
        except registry.LanguageGrammarError as error:
            found[info.plugin.name] = registry.PluginProblem(f"{info.distribution} ({info.plugin.name})", str(error))
    return found


def _print_problems(problems) -> None:
    """The plugins left out or in conflict, on stderr (``--json`` keeps stdout a list of plugins);
    exit status 1 when there is one."""
    for problem in problems:
        err_console.print(f"[red]left out, in conflict or refused:[/red] {escape(str(problem))}")
    if problems:
        raise typer.Exit(1)



def _dedup_tokens(path: Path, plugin, code: str) -> tuple[list[str], bool]:
    """The tokens ``workbench dedup`` compares for ``code`` (line ends normalised, the plugin's own
    ``tokens`` or ``scan_tokens`` where it overrides them: :func:`~workbench.dedup.tokens.token_bytes`)
    and whether the file parses with syntax errors, as that same call says (``has_error``): what dedup
    counts in ``parse_errors``, also for a plugin whose ``scan_tokens`` decides it, and ``False`` for
    one that overrides only ``tokens`` (dedup knows no parse error then).

    Raises:
        WorkbenchError: the plugin's tokenizer raised, naming the method dedup called
            (dedup lists such a file in ``unreadable.csv``).
    """
    from workbench.dedup.tokens import normalise_newlines, token_bytes
    from workbench.errors import WorkbenchError

    text = normalise_newlines(code)
    try:
        tokens, parse_error = token_bytes(plugin, text)
    except Exception as error:  # noqa: BLE001 - a third-party plugin's tokenizer
        raise WorkbenchError(
            f"{path}: the {plugin.name} plugin's {_tokenizer_method(plugin)} raised {type(error).__name__}: {error}; "
            f"workbench dedup lists such a file in unreadable.csv (fix the plugin)") from error
    return [token.decode("utf-8", errors="replace") for token in tokens], parse_error


def _subcode_failure(path: Path, plugin, error: Exception) -> str:
    """The one line for an exception raised while :func:`~workbench.score.decompose.decompose` found a file's
    sub-codes, naming the step that raised: the outermost plugin method in the traceback (``parse()``,
    ``compiled_name_query()``, a property such as ``definition_fields``), else workbench's own function that
    raised on what the plugin gave it (``decompose()`` on a ``parse()`` result with no ``root_node``,
    ``program_names()`` on a ``definition_fields`` that is no mapping).

    Args:
        path: the inspected file; plugin: its language plugin; error: what ``decompose`` raised.
    """
    import traceback

    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)]
    method = next((frame.f_code.co_name for frame in frames if frame.f_locals.get("self") is plugin), None)
    what = f"{type(error).__name__}: {error}"
    if method is not None:
        shown = method if isinstance(getattr(type(plugin), method, None), property) else f"{method}()"
        return (f"{path}: the {plugin.name} plugin's {shown} raised {what} while finding its DSA-CQE sub-codes "
                f"(fix the plugin's {shown})")
    ours = [frame.f_code.co_name for frame in frames if frame.f_globals.get("__name__", "").startswith("workbench.")]
    step = ours[-1] if ours else "decompose"
    return (f"{path}: finding its DSA-CQE sub-codes failed in workbench's {step}() with {what}, on what the "
            f"{plugin.name} plugin gave it (its parse() tree, subcode_node_types or name fields); fix the plugin")


def _tokenizer_method(plugin) -> str:
    """The plugin method :func:`~workbench.dedup.tokens.token_bytes` calls for it, as a message names it:
    ``"scan_tokens()"`` or ``"tokens()"`` where the plugin overrides them, else ``"parse()"`` (the
    default walk over the parse tree, which only a plugin's ``parse`` or node-walk override can break)."""
    from workbench.languages import LanguagePlugin

    kind = type(plugin)
    if kind.scan_tokens is not LanguagePlugin.scan_tokens:
        return "scan_tokens()"
    if kind.tokens is not LanguagePlugin.tokens:
        return "tokens()"
    if kind.iter_token_nodes is not LanguagePlugin.iter_token_nodes:
        return "parse() or iter_token_nodes()"
    return "parse()"


def _inspect(path: Path, language: str | None, json_output: bool,
             source_encoding: str = DEFAULT_SOURCE_ENCODING) -> None:
    """Print the dedup tokens and the DSA-CQE sub-codes of one file, read as ``workbench dedup``
    reads a source folder's file (:func:`~workbench.data.text_encoding.decode_source_file`: UTF-8,
    a byte-order mark, the file's own declaration, else ``source_encoding``).

    Raises:
        WorkbenchError: no plugin for the file, an unknown ``source_encoding``, a file dedup
            would skip (unreadable, empty, binary, in no encoding it tries), with dedup's reason,
            or a plugin tokenizer, parse or other method that raises (naming the method; naming
            workbench's step where that raised on what the plugin gave it: :func:`_subcode_failure`).
    """
    from workbench.data.text_encoding import check_source_encoding, decode_source_file
    from workbench.errors import WorkbenchError
    from workbench.languages import get_language, language_for_path
    from workbench.score.decompose import decompose

    plugin = get_language(language) if language else language_for_path(str(path))
    if plugin is None:
        raise WorkbenchError(f"{path}: no language plugin for its extension; pass --language")
    check_source_encoding(source_encoding)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise WorkbenchError(f"{path}: cannot read it ({error.strerror or error})") from error
    decoded = decode_source_file(data, plugin, source_encoding)
    if decoded.text is None:
        raise WorkbenchError(f"{path}: not read ({decoded.reason}); workbench dedup skips such a file too")
    code = decoded.text
    capabilities = plugin.capabilities()
    tokens = parse_error = None
    if "tokens" in capabilities:
        tokens, parse_error = _dedup_tokens(path, plugin, code)
    try:
        decomposition = decompose(code, plugin) if "decompose" in capabilities else None
    except Exception as error:  # noqa: BLE001 - a third-party plugin's parse, name query or sub-code map
        raise WorkbenchError(_subcode_failure(path, plugin, error)) from error
    view = {
        "file": str(path), "language": plugin.name, "encoding": decoded.encoding, "tokens": tokens,
        "parse_error": parse_error,
        "subcodes": [{k: v for k, v in sub.as_dict().items() if k != "text"} for sub in decomposition.subcodes]
        if decomposition else None,
        "subcode_candidates": decomposition.candidates if decomposition else None,
        "subcodes_folded": decomposition.folded if decomposition else None,
    }
    if json_output:
        import json

        typer.echo(json.dumps(view, indent=2))
        return
    console.print(f"[bold]{escape(str(path))}[/bold] as {plugin.name}"
                  + (f" [yellow](read as {escape(decoded.encoding)}, not UTF-8)[/yellow]" if decoded.encoding else "")
                  + (" [red](parsed with syntax errors)[/red]" if parse_error else ""))
    if tokens is not None:
        console.print(f"dedup tokens ({len(tokens)}): {escape(' '.join(tokens))}")
    if decomposition is None:
        console.print(f"the {plugin.name} plugin has no sub-code map")
        return
    table = Table(title=f"sub-codes in analysis order ({len(decomposition.subcodes)} of "
                        f"{decomposition.candidates} candidates; {decomposition.folded} folded)")
    for column in ("#", "kind", "node type", "lines", "defines", "uses", "parent"):
        table.add_column(column)
    for sub in decomposition.subcodes:
        table.add_row(str(sub.index), sub.kind.value, sub.node_type, f"{sub.start_line}-{sub.end_line}",
                      escape(", ".join(sub.defines)), escape(", ".join(sub.uses)),
                      "" if sub.parent is None else str(sub.parent))
    console.print(table)
