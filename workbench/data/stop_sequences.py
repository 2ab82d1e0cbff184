"""Stop sequences: cut a raw generation where the model went on past the program.

Models emit text after the function they were asked for: ``print(...)`` calls, ``assert``
lines, a second ``def``, a cut-off last line. Harnesses in the field truncate the generation
at the first of a set of *stop sequences* before running it: the Codex paper (Chen et al.
2021, "Evaluating Large Language Models Trained on Code", Sec. 3.2: "we sample tokens until we
encounter one of the following stop sequences: '\\nclass', '\\ndef', '\\n#', '\\nif', or
'\\nprint'") and bigcode-evaluation-harness (``humaneval.py``, ``_stop_at_stop_token``: the
text up to the earliest stop sequence, searched after the prompt). ``workbench execute`` and
``workbench score`` take the same ``--stop`` so the judge sees what was executed.

Example:

>>> stops = resolve_stop_sequences(["humaneval"])
>>> cut = truncate_generation("    return x\\n\\nprint(f(2))\\n", stops)
>>> cut.text, cut.stop
('    return x\\n', '\\nprint(')
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: named sets of stop sequences (``--stop humaneval``). ``humaneval``: the Codex paper's set
#: (Chen et al. 2021, Sec. 3.2) with a space after ``def``/``class``/``if`` so that names
#: beginning with those words (``define_x = 1``) do not stop, ``print(`` for the same reason,
#: and ``\nassert `` for the test lines models append.
STOP_PRESETS: dict[str, tuple[str, ...]] = {
    "humaneval": ("\ndef ", "\nclass ", "\nif ", "\nprint(", "\n#", "\nassert "),
}

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}
_ESCAPE = re.compile(r"\\([ntr\\])")


def decode_escapes(text: str) -> str:
    """Turn the escapes ``\\n``, ``\\t``, ``\\r`` and ``\\\\`` typed on a command line into the
    characters (a shell passes ``--stop '\\ndef '`` as a backslash and an ``n``); other text,
    real newlines included (a TOML ``"\\n"``), is kept as it is."""
    return _ESCAPE.sub(lambda match: _ESCAPES[match.group(1)], text)


_TYPED = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def typed_stop(value: str) -> str:
    """One ``--stop`` value as a command line types it, on one line: :func:`decode_escapes` undone, a
    backslash doubled and a newline, tab or carriage return written ``\\n``, ``\\t``, ``\\r``. Two
    values cut at the same sequence exactly when their typed forms are equal (a TOML ``"\\n"``, a real
    newline, and ``--stop '\\n'`` are one setting), so a resume compares and shows these.

    >>> typed_stop("\\\\n#"), typed_stop("\\n#"), typed_stop("humaneval")  # typed escape, real newline, preset
    ('\\\\n#', '\\\\n#', 'humaneval')
    """
    return "".join(_TYPED.get(character, character) for character in decode_escapes(value))


def resolve_stop_sequences(values: Iterable[str]) -> tuple[str, ...]:
    """The stop sequences of a ``--stop`` option: preset names expanded, escapes decoded,
    repeats dropped, in the order given.

    Args:
        values: each a preset name (:data:`STOP_PRESETS`) or a stop sequence.

    Returns:
        the stop sequences (empty when ``values`` is).

    Raises:
        ValueError: a value that is empty (it would cut every generation to nothing).
    """
    found: list[str] = []
    for value in values:
        if value in STOP_PRESETS:
            found.extend(STOP_PRESETS[value])
            continue
        decoded = decode_escapes(value)
        if not decoded:
            raise ValueError("must not be empty: an empty stop sequence would cut every generation to nothing")
        found.append(decoded)
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class Truncation:
    """A generation after stop-sequence truncation.

    Attributes:
        text: the generation up to (not including) the first stop sequence, or all of it.
        stop: the stop sequence that cut it, or ``None`` when none occurs.
        removed_chars: characters cut off (0 when not cut).
    """

    text: str
    stop: str | None
    removed_chars: int

    @property
    def truncated(self) -> bool:
        """Whether a stop sequence cut the generation."""
        return self.stop is not None


def truncate_generation(text: str, stops: Iterable[str], prompt: str = "") -> Truncation:
    """Cut ``text`` at the earliest occurrence of any of ``stops``.

    When ``text`` starts with ``prompt`` (a whole program that repeats the problem's prompt)
    the search starts after it, as bigcode-evaluation-harness searches the generation after
    the prompt: the prompt's own lines never stop it.

    Args:
        text: the raw generation.
        stops: stop sequences (:func:`resolve_stop_sequences`); none: ``text`` is kept whole.
        prompt: the problem's prompt, or ``""``.

    Returns:
        a :class:`Truncation`.
    """
    start = len(prompt) if prompt and text.startswith(prompt) else 0
    cut, found = len(text), None
    for stop in stops:
        index = text.find(stop, start)
        if index != -1 and index < cut:
            cut, found = index, stop
    return Truncation(text[:cut], found, len(text) - cut)


def stop_option_values(values: Iterable[str]) -> tuple[str, ...]:
    """:func:`resolve_stop_sequences` for a job config's ``stop`` field.

    Raises:
        OptionError: an empty stop sequence, naming the ``stop`` option.
    """
    from workbench.options import OptionError

    try:
        return resolve_stop_sequences(values)
    except ValueError as problem:
        raise OptionError(f"{{stop}} {problem}", "stop") from None


def stop_help() -> str:
    """The help text of the ``stop`` option (one source for every command that has it)."""
    presets = "; ".join(f"{name}: {', '.join(repr(s) for s in stops)}" for name, stops in STOP_PRESETS.items())
    return ("Cut each generation at the first of these stop sequences before it is used (repeatable; "
            "\\n, \\t are read as escapes), or a preset name (" + presets + "). "
            "The rows record which samples were cut (generation_truncated, stop_sequence).")
