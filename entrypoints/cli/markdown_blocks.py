"""Splits streamed Markdown into finished top-level blocks and the tail that may still change."""

from __future__ import annotations

from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # The same dialect rich's Markdown renders, so a block boundary here is one there.
    return MarkdownIt().enable("strikethrough").enable("table")


def block_starts(text: str) -> list[int]:
    """The first line (0-based) of every top-level block of ``text``, in order."""
    # Opening tokens (nesting 1) and whole blocks (fence, hr, ...: nesting 0) at level 0 carry the line range.
    tokens = _parser().parse(text)
    return sorted({token.map[0] for token in tokens if token.level == 0 and token.nesting >= 0 and token.map})


def split_finished(text: str) -> tuple[list[str], str]:
    """The blocks of ``text`` that nothing appended later can change, and the rest (the tail).

    Only complete lines decide: the last, unfinished line may still turn into anything (``#`` may become ``#tag``).
    A top-level block is finished once a later block has started on a complete line: CommonMark never reopens a
    closed block, and what can still change a block (a setext underline, a table's delimiter row, an indented
    continuation) only attaches to the last one.

    Returns:
        The source of each finished block (surrounding blank lines stripped) and the unfinished tail.
    """
    complete = text[: text.rfind("\n") + 1]
    starts = block_starts(complete)
    if len(starts) < 2:
        return [], text
    lines = complete.splitlines(keepends=True)
    bounds = [0, *starts[1:]]  # lines before the first block (blank, a link definition) go with it
    blocks = ["".join(lines[start:end]).strip("\n") for start, end in pairwise(bounds)]
    cut = sum(len(line) for line in lines[: starts[-1]])
    return [block for block in blocks if block.strip()], text[cut:]
