"""Every relative link in the README and ``docs/`` names a file of the repository, and every
``#anchor`` a heading of its target (GitHub's heading slugs), so moving a section cannot leave a
dead link behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "configs").glob("*.md")),
             *sorted((ROOT / "benchmarks").rglob("README.md"))]
#: ``[text](target)``, not images' sources on the web, not inside inline code
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but ``-`` and ``_`` dropped, spaces to ``-``."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(document: Path) -> set[str]:
    anchors, seen = set(), {}
    in_code = False
    for line in document.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        slug = _slug(line.lstrip("#"))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _links(document: Path):
    in_code = False
    for number, line in enumerate(document.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
                continue
            yield number, target


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_resolve(document):
    dead = []
    for number, target in _links(document):
        path_part, _, anchor = target.partition("#")
        resolved = (document.parent / path_part).resolve() if path_part else document
        if not resolved.exists():
            dead.append(f"line {number}: {target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            dead.append(f"line {number}: {target} (no heading #{anchor} in {resolved.name})")
    assert not dead, "\n".join(dead)


def test_the_slugs_follow_github():
    assert _slug(" Outputs (`-o DIR`)") == "outputs--o-dir"
    assert _slug(" On Apache Spark (`--engine spark`)") == "on-apache-spark---engine-spark"
