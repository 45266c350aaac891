"""Turns an HTML page into readable plain text (title + body text), parsed by selectolax's lexbor HTML5 parser."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object", "canvas"})
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption", "figure", "footer",
        "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
        "table", "td", "th", "tr", "ul",
    }
)  # fmt: skip
_SKIPPED_SELECTOR: Final = ", ".join(sorted(_SKIPPED | {"title"}))
_BLOCKS_SELECTOR: Final = ", ".join(sorted(_BLOCKS))
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")


@dataclass(frozen=True, kw_only=True, slots=True)
class PageText:
    """A page's readable content.

    Attributes:
        title: The ``<title>`` text (empty when there is none).
        text: The visible text, one block per line, whitespace collapsed.
        truncated: The text was cut to the requested length.
    """

    title: str
    text: str
    truncated: bool = False


def html_to_text(html: str, *, max_characters: int | None = None) -> PageText:
    """Extract the title and the visible text of an HTML page (scripts, styles and similar are left out).

    The page is parsed as a browser would (lexbor, through selectolax): unclosed tags, stray end tags and entities are
    handled as in a browser. Block elements (paragraphs, headings, list items, table cells, ``<br>``) start a line;
    inline ones (links, emphasis) stay within theirs.

    Args:
        html: The page.
        max_characters: Cut the text to this length (``None``: no cut).

    Returns:
        The page's title and text.
    """
    from selectolax.lexbor import LexborHTMLParser  # only a page read by a web tool needs the parser

    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = " ".join(title_node.text(deep=True).split()) if title_node is not None else ""
    body = tree.body
    if body is None:
        return PageText(title=title, text="")
    for node in body.css(_SKIPPED_SELECTOR):
        node.decompose()
    for node in body.css(_BLOCKS_SELECTOR):
        node.insert_before("\n")
        node.insert_after("\n")
    text = tidy(body.text(deep=True))
    if max_characters is not None and len(text) > max_characters:
        return PageText(title=title, text=text[:max_characters].rstrip(), truncated=True)
    return PageText(title=title, text=text)


def tidy(text: str) -> str:
    """Collapse runs of spaces, strip every line and drop empty lines."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)
