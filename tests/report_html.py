"""Reading a rendered report.html in a test as its reader sees it: one element's markup by its ``id``, and the
text a browser shows for markup (tests/ is on pytest's ``pythonpath``)."""

from __future__ import annotations

import html
import re


def shown_text(markup: str, *, tag: str = " ") -> str:
    """The text a browser shows for ``markup``: each tag replaced by ``tag``, entities read, white space
    collapsed to single spaces, none at either end.

    Args:
        markup: HTML text.
        tag: what stands for a tag. ``" "`` (the default) keeps the words of two elements apart, as a
            browser does for block elements; ``""`` joins what two tags touch, so that a test can see
            words that run together across an inline tag (``0.8657]`` + ``(unbiased``).

    Returns:
        The text, one line.
    """
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", tag, markup))).strip()


def element(page: str, element_id: str) -> str:
    """The inner markup of the element with ``id="element_id"`` on ``page``: from its start tag to the first
    end tag of the same name after it (an element nested in one of its own kind is cut at the inner one).

    Raises:
        ValueError: no element of that id on ``page``.
    """
    start = page.index(f'id="{element_id}"')
    name = page[page.rindex("<", 0, start) + 1:start].split()[0]
    return page[page.index(">", start) + 1:page.index(f"</{name}>", start)]
