"""Turns an HTML page into readable plain text (title + body text), with the standard library's HTML parser."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object", "canvas"})
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption", "figure", "footer",
        "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
        "table", "td", "th", "tr", "ul",
    }
)  # fmt: skip
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


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pieces: list[str] = []
        self.title: list[str] = []
        self._skipping = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skipping += 1
        elif tag == "title":
            self._in_title = True
        elif tag in _BLOCKS:
            self.pieces.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # A self-closed <svg/> opens nothing; a <br/> still breaks the line.
        if tag in _BLOCKS:
            self.pieces.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag == "title":
            self._in_title = False
        elif tag in _BLOCKS:
            self.pieces.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self._in_title:
            self.title.append(data)
        else:
            self.pieces.append(data)


def html_to_text(html: str, *, max_characters: int | None = None) -> PageText:
    """Extract the title and the visible text of an HTML page (scripts, styles and similar are left out).

    Args:
        html: The page.
        max_characters: Cut the text to this length (``None``: no cut).

    Returns:
        The page's title and text.
    """
    extractor = _TextExtractor()
    extractor.feed(html)
    extractor.close()
    text = tidy("".join(extractor.pieces))
    title = " ".join("".join(extractor.title).split())
    if max_characters is not None and len(text) > max_characters:
        return PageText(title=title, text=text[:max_characters].rstrip(), truncated=True)
    return PageText(title=title, text=text)


def tidy(text: str) -> str:
    """Collapse runs of spaces, strip every line and drop empty lines."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)
