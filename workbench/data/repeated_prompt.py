"""Generations that begin with their own prompt: whole programs where a completion was expected.

Some models (and some datasets' ``completion`` columns) give the whole program, signature and
docstring included, rather than the text after the prompt. Put after the prompt, such a
program holds the prompt twice: ``execute`` (``--mode completion``) then compiles the
declarations twice (an error in Java or C++; Python silently redefines the function), and
``score``'s judge and metrics see the prompt twice over. Both jobs count these generations before any
work and say so with the option that fixes it; this module is that one count and sentence.

Example:

>>> repeated_prompt_note([("def f():\\n", "def f():\\n    return 1\\n"), ("def g():\\n", "    return 2\\n")],
...                      noun="generation", consequence="shown after the prompt twice", remedy="pass --no-prompt")
'1 of 2 generations begins with its own prompt: whole programs, shown after the prompt twice; pass --no-prompt'
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.formatting import count


def begins_with_prompt(prompt: str | None, generation: str | None) -> bool:
    """Whether ``generation`` starts with ``prompt`` (leading and trailing blanks of both aside);
    ``False`` for a missing or blank prompt or a missing generation."""
    if not prompt or not generation or not prompt.strip():
        return False
    return generation.lstrip().startswith(prompt.strip())


def repeated_prompt_note(pairs: Iterable[tuple[str | None, str | None]], *, noun: str, consequence: str,
                         remedy: str) -> str | None:
    """The note on generations that begin with their own prompt, or ``None`` when none does.

    Args:
        pairs: ``(prompt, generation)`` per sample, as the job will put them together.
        noun: what a generation is called in the job (``"generation"``, ``"completion"``).
        consequence: what the job would do with such a whole program (after ``"whole programs, "``).
        remedy: the option that fixes it (``"pass --mode full"``).

    Returns:
        ``"<n> of <N> <noun>s begin with their own prompt: whole programs, <consequence>; <remedy>"``.
    """
    flags = [begins_with_prompt(prompt, generation) for prompt, generation in pairs]
    repeated = sum(flags)
    if not repeated:
        return None
    return (f"{repeated} of {count(len(flags), noun)} {'begins with its' if repeated == 1 else 'begin with their'} "
            f"own prompt: whole programs, {consequence}; {remedy}")
