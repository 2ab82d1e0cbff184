"""Prompt templates of ``workbench score``: files under ``workbench/prompts/`` (the
repository's top-level ``prompts/`` links there), rendered with Jinja2.

A template file has a leading ``{# ... #}`` comment naming its source and variables, then
``=== system ===`` and ``=== user ===`` sections. The *version* of a set of templates is
the first 12 hex digits of the SHA-256 over their names and bytes; it is recorded in
every output row and is part of the LLM cache key.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError

_SECTION = re.compile(r"^=== (system|user) ===[ \t]*$", re.MULTILINE)


class PromptError(WorkbenchError):
    """A prompt template is missing or malformed."""


@dataclass(frozen=True)
class PromptTemplate:
    """One template file.

    Attributes:
        name: the file name (``"dsa_cqe_analyse.txt"``).
        text: the file's text.
        version: 12 hex digits of SHA-256 of the file's bytes.
    """

    name: str
    text: str
    version: str

    def render(self, **variables: Any) -> list[dict[str, str]]:
        """Return chat messages (system first, if present) with ``variables`` filled in.

        Raises:
            PromptError: a variable the template uses is missing.
        """
        import jinja2

        environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False)
        try:
            rendered = environment.from_string(self.text).render(**variables)
        except jinja2.UndefinedError as error:
            raise PromptError(f"{self.name}: {error}") from error
        parts = _SECTION.split(rendered)
        messages = []
        for role, content in zip(parts[1::2], parts[2::2]):
            messages.append({"role": role, "content": content.strip("\n")})
        if not messages or messages[-1]["role"] != "user":
            raise PromptError(f"{self.name}: a template needs a '=== user ===' section")
        return messages


def default_prompts_dir() -> Path:
    """Return the folder of the shipped templates (inside the installed package)."""
    return Path(str(resources.files("workbench") / "prompts"))


def load_template(name: str, directory: str | os.PathLike[str] | None = None) -> PromptTemplate:
    """Read one template.

    Args:
        name: file name.
        directory: a folder of templates; default :func:`default_prompts_dir`.

    Raises:
        PromptError: the file does not exist or has no user section.
    """
    folder = Path(directory) if directory is not None else default_prompts_dir()
    path = folder / name
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PromptError(f"prompt template {path} cannot be read: {error.strerror or error}") from error
    text = data.decode("utf-8")
    if not _SECTION.search(text):
        raise PromptError(f"{path}: no '=== user ===' section")
    return PromptTemplate(name, text, hashlib.sha256(data).hexdigest()[:12])


def load_templates_or_problem(names: tuple[str, ...], directory: str | os.PathLike[str] | None = None
                              ) -> tuple[tuple[PromptTemplate, ...], str | None]:
    """Read templates a run may not need (a method's several-references form): a folder of
    ``--prompts-dir`` copies made before they existed is no error until a sample needs them.

    Args:
        names: file names.
        directory: as :func:`load_template`.

    Returns:
        ``(templates, None)``, or ``((), why)`` when one cannot be read (the :class:`PromptError`'s text).
    """
    try:
        return tuple(load_template(name, directory) for name in names), None
    except PromptError as error:
        return (), str(error)


def version_of(*templates: PromptTemplate) -> str:
    """Return the combined version of several templates (order-independent)."""
    digest = hashlib.sha256()
    for template in sorted(templates, key=lambda t: t.name):
        digest.update(f"{template.name}:{template.version}\n".encode())
    return digest.hexdigest()[:12]
