"""leftovers38c: the ``prompts_dir`` docstrings of the LLM judges named their one-reference
templates only, not the several-references forms (``prompts/*_references.txt``) they also read
from that folder, and ``workbench score --help`` described ``--reference-column`` as "Column with
the reference solution", not saying that a list-valued column gives several references
(docs/score.md, Several references).

Which files a judge reads is found by building it for real from a ``--prompts-dir`` that lacks one
shipped template at a time (a missing file it reads is a :class:`PromptError`, or its
``several_references_problem``); each must be named in the judge's docstring."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.score.methods import METHODS, make_method
from workbench.score.prompts import PromptError

SHIPPED = Path(__import__("workbench.prompts", fromlist=["_"]).__path__[0])
TEMPLATES = sorted(path.name for path in SHIPPED.glob("*.txt"))
VARIANTS = [("ice-score", {}), ("ice-score-usefulness", {}), ("p-correct", {}), ("p-correct", {"analyse_first": True}),
            ("dsa-cqe-simplified", {}), ("dsa-cqe-simplified", {"final_step": "p-correct"}),
            ("dsa-cqe", {}), ("dsa-cqe", {"final_step": "p-correct"})]


def _reads(name: str, options: dict, tmp_path: Path) -> set[str]:
    read = set()
    for missing in TEMPLATES:
        folder = tmp_path / f"without-{missing}"
        if not folder.exists():
            shutil.copytree(SHIPPED, folder, ignore=shutil.ignore_patterns(missing, "*.md"))
        try:
            method = make_method(name, str(folder), **options)
        except PromptError as error:
            assert missing in str(error), error
            read.add(missing)
            continue
        if missing in (getattr(method, "several_references_problem", None) or ""):
            read.add(missing)
    return read


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=[f"{n}{'-' + '-'.join(o) if o else ''}" for n, o in VARIANTS])
def test_a_judges_docstring_names_every_template_it_reads(name: str, options: dict, tmp_path: Path) -> None:
    cls = METHODS[name]
    read = _reads(name, options, tmp_path)
    assert any(file.endswith("_references.txt") for file in read), read  # the test sees the several-references form
    said = " ".join(part for part in (cls.__doc__, cls.__init__.__doc__) if part)
    assert not {file for file in read if file not in said}, f"{cls.__name__} docstring does not name " \
        f"{sorted(file for file in read if file not in said)}"


def test_reference_column_help_says_a_list_gives_several_references() -> None:
    shown = " ".join(CliRunner().invoke(app, ["score", "--help"]).output.replace("│", " ").split())  # Rich's box
    assert "--reference-column" in shown
    assert "a list-valued column gives several references" in shown, shown
