"""Streamed Markdown: a block called finished never changes, whatever text arrives after it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.cli.markdown_blocks import split_finished

LINES = [
    "",
    "",
    "# Heading",
    "#",
    "#tag",
    "Some text",
    "more text",
    "===",
    "---",
    "- item",
    "- ",
    "1. first",
    "2. second",
    "  indented",
    "    code",
    "> quote",
    "```",
    "```python",
    "~~~",
    "| a | b |",
    "|---|---|",
    "| 1 | 2 |",
    "<div>",
    "***",
    "[ref]: https://example.org",
]

documents = st.lists(st.sampled_from(LINES), max_size=14).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(documents)
def test_finished_blocks_never_change_as_text_streams_in(text: str) -> None:
    final, _ = split_finished(text)
    for cut in range(len(text) + 1):  # every moment of the stream, one character at a time
        early, _ = split_finished(text[:cut])
        assert early == final[: len(early)], text[:cut]


@settings(max_examples=200, deadline=None)
@given(documents)
def test_finished_blocks_and_tail_keep_all_the_text(text: str) -> None:
    blocks, tail = split_finished(text)
    assert tail == text[len(text) - len(tail) :]
    kept = "".join(block.replace("\n", "") for block in blocks) + tail.replace("\n", "")
    assert kept == text.replace("\n", "")


def test_a_new_block_on_a_complete_line_finishes_the_one_before() -> None:
    assert split_finished("# Title\n\nFirst paragraph.\n\n- one\n- tw") == (
        ["# Title", "First paragraph."],
        "- one\n- tw",
    )


def test_the_unfinished_last_line_decides_nothing() -> None:
    assert split_finished("para\n#") == ([], "para\n#")  # "#" may still become "#tag", part of the paragraph
    assert split_finished("para\n# x\n") == (["para"], "# x\n")


def test_an_open_code_fence_stays_one_block() -> None:
    assert split_finished("```\ncode\n\n# not a heading\n") == ([], "```\ncode\n\n# not a heading\n")
