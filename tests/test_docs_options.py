"""Every option, config key and Python name the documentation shows exists with that spelling:
a ``--flag`` written after ``workbench CMD`` (inline or in a code block, continuation lines
joined) is an option of CMD, a ``[table] key`` or ``--set table.key=`` is a key of that table of a
``workbench run`` config (or a former name that still works, or one the page says is refused), and
a ``from workbench... import name`` imports. A renamed option cannot leave a page behind that
tells users to type the old spelling (test_option_names.py checks the options themselves,
test_docs_links.py the links)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import typer

from workbench.cli import app
from workbench.run.config import COMMAND_CONFIGS, SECTION_COMMANDS, table_keys

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "configs").glob("*.md")), *sorted((ROOT / "docs").glob("*.md")),
             *sorted(ROOT.glob("plugins/*/README*"))]
IDS = [str(path.relative_to(ROOT)) for path in DOCUMENTS]
TABLES = ["run", "data", *SECTION_COMMANDS]
#: ``workbench CMD [SUB] ...`` up to the end of the inline code span, a shell separator or the next command
COMMAND = re.compile(r"workbench ([a-z]+)(?: ([a-z]+))?((?:(?! workbench )[^`|;&#\n])*)")
#: a flag, not the tail of a word, a path, a URL or ``--set x=--y``
FLAG = re.compile(r"(?<![\w\-=/.'\"])(--?[a-zA-Z][\w-]*)")


def _flags(command) -> set[str]:
    return {"--help", "-h"} | {flag for param in command.params for flag in (*param.opts, *param.secondary_opts)}


def _commands_in(text: str):
    """(line number, command words, the text after them) for every ``workbench CMD`` in ``text``."""
    joined = text.replace("\\\n", " \x00")  # a shell continuation: one command, line numbers kept
    for number, line in enumerate(joined.split("\n"), 1):
        for match in COMMAND.finditer(line.replace("\x00", "")):
            yield number, match.group(1), match.group(2), match.group(3)


def unknown_flags(text: str) -> list[str]:
    """``line N: workbench CMD --flag`` for each flag that CMD (or CMD SUB) does not take."""
    root = typer.main.get_command(app)
    unknown = []
    for number, name, word, rest in _commands_in(text):
        command = root.commands.get(name)  # type: ignore[attr-defined]
        if command is None:
            continue  # `workbench run`'s own prose ("workbench is ..."), not a command
        if hasattr(command, "commands"):
            command = command.commands.get(word or "")
            if command is None:
                continue
        elif word:
            rest = f" {word}{rest}"
        known = _flags(command)
        unknown += [f"line {number}: workbench {name} {flag}" for flag in FLAG.findall(rest) if flag not in known]
    return unknown


def _former_names(table: str) -> set[str]:
    command = SECTION_COMMANDS.get(table)
    if command is None:
        return set()
    return {alias for option in COMMAND_CONFIGS[command].options().values() for alias in option.declared.aliases}


def unknown_keys(text: str) -> list[str]:
    """``line N: [table] key`` for each key a config of ``workbench run`` does not take, unless its
    paragraph calls it deprecated or former (a former name that still works) or refused."""
    unknown, number = [], 1
    for paragraph in re.split(r"(\n\s*\n)", text):
        for offset, line in enumerate(paragraph.splitlines()):
            named = re.findall(r"\[([a-z_]+)\] ([a-z_]+)", line)
            named += re.findall(r"--set '?([a-z_]+)\.([a-z_]+)=", line)
            for table, key in named:
                if table not in TABLES or key in table_keys(table):
                    continue
                if key in _former_names(table) and re.search(r"deprecated|former", paragraph, re.IGNORECASE):
                    continue
                options = COMMAND_CONFIGS[SECTION_COMMANDS[table]].options() if table in SECTION_COMMANDS else {}
                if key in options and "refused" in paragraph:
                    continue
                unknown.append(f"line {number + offset}: [{table}] {key}")
        number += paragraph.count("\n")
    return unknown


def missing_imports(text: str) -> list[str]:
    """``from workbench... import a, b`` lines whose module or names do not import."""
    missing = []
    for match in re.finditer(r"from (workbench[\w.]*) import ([\w, ]+)", text):
        number = text[:match.start()].count("\n") + 1
        module = importlib.import_module(match.group(1))
        for name in filter(None, (part.strip() for part in match.group(2).split(","))):
            if not hasattr(module, name):
                try:
                    importlib.import_module(f"{match.group(1)}.{name}")
                except ImportError:
                    missing.append(f"line {number}: {match.group(1)}.{name}")
    return missing


@pytest.mark.parametrize("document", DOCUMENTS, ids=IDS)
def test_every_flag_after_a_command_is_an_option_of_it(document):
    unknown = unknown_flags(document.read_text(encoding="utf-8"))
    assert not unknown, "\n".join(unknown)


@pytest.mark.parametrize("document", DOCUMENTS, ids=IDS)
def test_every_config_key_named_is_a_key_of_its_table(document):
    unknown = unknown_keys(document.read_text(encoding="utf-8"))
    assert not unknown, "\n".join(unknown)


@pytest.mark.parametrize("document", DOCUMENTS, ids=IDS)
def test_every_python_import_shown_imports(document):
    text = document.read_text(encoding="utf-8")
    text = re.sub(r"from workbench_go import .*", "", text)  # the guide's example plugin, written by the reader
    missing = missing_imports(text)
    assert not missing, "\n".join(missing)


def test_the_checks_catch_drift():
    """Each check fails on the kind of drift it is there for (so a pass means something)."""
    assert unknown_flags("`workbench dedup x --min-token 5 -o out`") == ["line 1: workbench dedup --min-token"]
    assert unknown_flags("```bash\nworkbench score g.jsonl \\\n    --concurency 2\n```") == [
        "line 2: workbench score --concurency"]
    assert unknown_flags("`workbench models serve q --alias x`") == ["line 1: workbench models --alias"]
    assert not unknown_flags("`workbench dedup x --min-tokens 5 -o out` and `workbench run c.toml --set a.b=--c`")
    assert unknown_keys("set `[score] method_limits`") == ["line 1: [score] method_limits"]
    assert unknown_keys("`--set 'execute.max_sample=5'`") == ["line 1: [execute] max_sample"]
    assert not unknown_keys("`[score] concurrency` is deprecated; `[score] retry_failed` is refused")
    assert missing_imports("from workbench import run_dedupe, run_dedup") == ["line 1: workbench.run_dedupe"]


def config_snippets(text: str) -> list[tuple[int, str]]:
    """(line, text) of each TOML block that is a ``workbench run`` config or part of one (its tables are
    the pipeline's; a plugin's ``pyproject.toml`` is not)."""
    snippets = []
    for match in re.finditer(r"```toml\n(.*?)```", text, re.DOTALL):
        tables = set(re.findall(r"^\[([a-z_]+)\]", match.group(1), re.MULTILINE))
        if tables and tables <= set(TABLES):
            snippets.append((text[:match.start()].count("\n") + 2, match.group(1)))
    return snippets


@pytest.mark.parametrize("document", DOCUMENTS, ids=IDS)
def test_every_config_snippet_is_accepted_by_the_loader(document):
    import tomllib

    from workbench.run.config import build_config

    for line, snippet in config_snippets(document.read_text(encoding="utf-8")):
        raw = tomllib.loads(snippet)
        raw.setdefault("data", {"source": "humaneval-codex-python", "code_column": "completion_multipl_e"})
        try:
            build_config(raw)
        except Exception as error:  # noqa: BLE001 - the message is the finding
            pytest.fail(f"line {line}: {error}")


def test_a_rejected_config_snippet_is_found():
    text = "```toml\n[score]\nmax_failure = 1\n```\n```toml\n[project]\nname = 'x'\n```\n"
    assert config_snippets(text) == [(2, "[score]\nmax_failure = 1\n")]


def test_the_plugin_guide_names_every_runspec_field():
    """docs/plugins.md lists RunSpec's fields for runner authors: a new field is listed there too."""
    import dataclasses

    from workbench.languages.spec import RunSpec

    guide = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    listed = guide.split("**`RunSpec`** fields:")[1].split("\n\n")[0]
    assert [field.name for field in dataclasses.fields(RunSpec) if f"`{field.name}`" not in listed] == []


#: a repository path in inline code: ``tests/...``, ``benchmarks/results/x.txt``, ``workbench/llm/client.py``
REPO_PATH = re.compile(r"`((?:tests|benchmarks|workbench|plugins|configs|prompts|docs)/[\w./*-]+)`(?! of )")


def missing_paths(text: str, *bases: Path) -> list[str]:
    """``line N: path`` for each repository path in inline code that names no file or folder under
    any of ``bases`` (globs allowed; a line that says the file is not tracked is skipped, and so is
    another project's file, "`docs/execution.md` of evalplus")."""
    missing = []
    for number, line in enumerate(text.splitlines(), 1):
        if "not tracked" in line:
            continue
        for path in REPO_PATH.findall(line):
            path = path.rstrip(".")
            if not any(base.glob(path) if "*" in path else (base / path).exists() for base in bases):
                missing.append(f"line {number}: {path}")
    return missing


@pytest.mark.parametrize("document", DOCUMENTS, ids=IDS)
def test_every_repository_path_named_exists(document):
    """A file moved or renamed leaves no page pointing at its old path (test_docs_links.py checks
    the Markdown links; these are the paths written as code)."""
    missing = missing_paths(document.read_text(encoding="utf-8"), ROOT, document.parent)
    assert not missing, "\n".join(missing)


def test_a_path_that_is_gone_is_found(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("")
    text = ("`tests/test_a.py`, `tests/test_*.py` and `tests/test_b.py`\n`tests/out.png` (not tracked)\n"
            "`docs/execution.md` of evalplus")
    assert missing_paths(text, tmp_path) == ["line 1: tests/test_b.py"]


def test_every_environment_variable_named_is_read_somewhere():
    """``$WORKBENCH_...`` in the docs is a variable the code (or setup.sh, CI, the tests) reads."""
    sources = [*ROOT.glob("workbench/**/*.py"), *ROOT.glob("plugins/*/src/**/*.py"), *ROOT.glob("tests/**/*.py"),
               ROOT / "setup.sh", ROOT / ".ci" / "run"]
    code = "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in sources if path.is_file())
    named = {name for document in DOCUMENTS
             for name in re.findall(r"WORKBENCH_[A-Z_]*[A-Z]", document.read_text(encoding="utf-8"))}
    assert named and sorted(name for name in named if name not in code) == []
