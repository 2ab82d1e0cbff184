"""workbench.data.repeated_prompt: the one count and sentence score and execute share for
generations that begin with their own prompt."""

from __future__ import annotations

from workbench.data.repeated_prompt import begins_with_prompt, repeated_prompt_note


def test_a_generation_begins_with_its_prompt_blanks_aside():
    assert begins_with_prompt("def f():\n    ", "\n def f():\n    return 1")
    assert not begins_with_prompt("def f():\n", "    return 1\n")
    for prompt, generation in (("", "x"), ("  \n", "  \n x"), (None, "x"), ("def f():", None)):
        assert not begins_with_prompt(prompt, generation)  # nothing to repeat, or nothing generated


def test_the_note_counts_and_names_the_remedy():
    pairs = [("def f():\n", "def f():\n    return 1\n")] * 2 + [("def g():\n", "    return 2\n")]
    note = repeated_prompt_note(pairs, noun="completion", consequence="run twice", remedy="pass --mode full")
    assert note == "2 of 3 completions begin with their own prompt: whole programs, run twice; pass --mode full"
    assert repeated_prompt_note(pairs[2:], noun="completion", consequence="c", remedy="r") is None
