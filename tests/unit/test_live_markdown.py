"""The live Markdown renderer on an emulated terminal: however the answer is chunked, each line is left once."""

from __future__ import annotations

import io
import itertools

import pyte
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.markdown import Markdown

from ironhive.cli.live_markdown import LiveMarkdownRenderer
from ironhive.domain.tool_calls import make_tool_call
from ironhive.domain.turn import TextDelta, ThinkingDelta, ToolCallChunk

WIDTH = 60
HEIGHT = 12

BLOCKS = [
    "# A heading",
    "## Another heading",
    "A short paragraph.",
    " ".join(f"word{n}" for n in range(40)),
    "\n".join(f"- bullet {n}" for n in range(15)),
    "\n".join(f"{n}. numbered {n}" for n in range(1, 10)),
    "> quoted text\n> more quoted text",
    "```\n" + "\n".join(f"code line {n}" for n in range(14)) + "\n```",
    "---",
]


def console(out: io.StringIO) -> Console:
    return Console(file=out, force_terminal=True, width=WIDTH, height=HEIGHT, color_system=None, highlight=False)


def scrollback(output: str) -> list[str]:
    screen = pyte.HistoryScreen(WIDTH, HEIGHT, history=10_000, ratio=0.5)
    pyte.Stream(screen).feed(output.replace("\n", "\r\n"))
    scrolled = ["".join(row[x].data for x in range(WIDTH)).rstrip() for row in screen.history.top]
    return [line for line in (*scrolled, *(row.rstrip() for row in screen.display)) if line.strip()]


def rendered_whole(text: str) -> list[str]:
    out = io.StringIO()
    console(out).print(Markdown(text))
    return [line.rstrip() for line in out.getvalue().splitlines() if line.strip()]


def stream(text: str, cuts: list[int]) -> str:
    out = io.StringIO()
    ticks = itertools.count(start=1000.0, step=1.0)  # every delta a second later: each one is drawn at once
    renderer = LiveMarkdownRenderer(console(out), show_thinking=False, now=lambda: next(ticks))
    bounds = [0, *sorted(set(cuts)), len(text)]
    for start, end in itertools.pairwise(bounds):
        if end > start:
            renderer.chunk(TextDelta(text=text[start:end]))
    renderer.pause()
    return out.getvalue()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(BLOCKS), min_size=1, max_size=6),
    st.lists(st.integers(min_value=0, max_value=2000), max_size=40),
)
def test_every_line_of_the_answer_is_left_once_in_order(blocks: list[str], cuts: list[int]) -> None:
    text = "\n\n".join(blocks) + "\n"
    shown = scrollback(stream(text, [cut for cut in cuts if cut < len(text)]))
    assert shown == rendered_whole(text)


def test_a_list_taller_than_the_window_scrolls_without_repeating_the_heading() -> None:
    text = "# Title\n\n" + "".join(f"- item {n}\n" for n in range(50))
    shown = scrollback(stream(text, list(range(0, len(text), 7))))
    assert shown.count("Title".center(WIDTH).rstrip()) == 1
    assert [line for line in shown if "item" in line] == [f" • item {n}" for n in range(50)]


def test_a_tool_call_line_comes_after_the_text_before_it() -> None:
    out = io.StringIO()
    ticks = itertools.count(start=1000.0, step=1.0)
    renderer = LiveMarkdownRenderer(console(out), show_thinking=False, now=lambda: next(ticks))
    renderer.chunk(TextDelta(text="Let me look."))
    renderer.chunk(ToolCallChunk(call=make_tool_call("c1", "read_file", "{}")))
    renderer.pause()
    assert scrollback(out.getvalue()) == ["Let me look.", "→ Calling tool: read_file"]


def test_shown_thinking_ends_its_line_before_the_answer() -> None:
    out = io.StringIO()
    ticks = itertools.count(start=1000.0, step=1.0)
    renderer = LiveMarkdownRenderer(console(out), show_thinking=True, now=lambda: next(ticks))
    renderer.chunk(ThinkingDelta(text="Thinking "))
    renderer.chunk(ThinkingDelta(text="hard."))
    renderer.chunk(TextDelta(text="The answer."))
    renderer.pause()
    assert scrollback(out.getvalue()) == ["Thinking hard.", "The answer."]
