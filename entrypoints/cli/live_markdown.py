"""Streams an answer on a terminal as Markdown: finished blocks printed once, the tail live, a spinner before it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ironhive.cli.markdown_blocks import split_finished
from ironhive.domain.turn import (
    AddendumChunk,
    AgentChunk,
    ContextCompactedChunk,
    FallbackChunk,
    TextDelta,
    ThinkingDelta,
    ToolCallChunk,
    ToolResultChunk,
    TurnRecord,
    cut_short,
)

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.live import Live
    from rich.segment import Segment

REFRESH_SECONDS = 1 / 15
"""The live tail is re-rendered at most this often (each render parses the whole tail again)."""


class _Lines:
    """Already rendered lines, printed as they are."""

    def __init__(self, lines: Iterable[list[Segment]]) -> None:
        self._lines = list(lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        for line in self._lines:
            yield from line
            yield Segment.line()


class _Waiting:
    """A spinner with the seconds since the request was sent."""

    def __init__(self, started: float, now: Callable[[], float]) -> None:
        from rich.spinner import Spinner

        self._started = started
        self._now = now
        self._spinner = Spinner("dots", style="cyan")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        self._spinner.update(text=Text(f"Waiting for the model… {self._now() - self._started:.1f}s", style="dim"))
        yield self._spinner


def _blank(line: list[Segment]) -> bool:
    return not "".join(segment.text for segment in line).strip()


class LiveMarkdownRenderer:
    """The terminal renderer of the interactive mode.

    Until the first visible chunk of a model request, a spinner counts the seconds. The answer's Markdown is split
    into top-level blocks (:func:`split_finished`): a finished block is printed once, into the scrollback, and only
    the unfinished last block is redrawn in a live area. A last block taller than the window (one long list) has its
    lines above the window printed for good as they scroll out, so no line is ever printed twice. Everything else (a
    tool call, a notice, an approval question) closes the live area first, so nothing ends up inside a redrawn region.
    """

    def __init__(self, console: Console, *, show_thinking: bool, now: Callable[[], float] = time.monotonic) -> None:
        self._console = console
        self._show_thinking = show_thinking
        self._now = now
        self._spinner: Live | None = None
        self._live: Live | None = None
        self._pending = ""  # text of the blocks not yet printed for good
        self._tail_printed = 0  # lines of the pending tail already printed (scrolled out of the window)
        self._blocks_done = 0  # blocks of the current answer printed for good (a blank line goes between two)
        self._last_refresh = 0.0
        self._scheduled: asyncio.TimerHandle | None = None
        self._mid_line = False  # shown thinking ended without a line break

    def start(self, session_id: str | None) -> None:
        """Show the spinner until the first visible chunk."""
        self._wait()

    def chunk(self, chunk: AgentChunk) -> None:
        """Show one chunk."""
        match chunk:
            case TextDelta(text=text):
                self._stop_spinner()
                self._append(text)
            case ThinkingDelta(text=text) if self._show_thinking:
                if self._live is not None or self._pending:
                    self.pause()
                self._stop_spinner()
                self._console.print(text, style="dim italic", end="", markup=False)
                self._mid_line = self._mid_line if not text else not text.endswith("\n")
            case ToolCallChunk(call=call):
                self.pause()
                self._console.print(f"→ Calling tool: {call.name}", style="cyan", markup=False)
            case ToolResultChunk(record=record):
                self.pause()
                if record.success is False:
                    first = record.result.strip().splitlines()[0] if record.result.strip() else "failed"
                    self._console.print(f"  {record.name} failed: {first[:200]}", style="yellow", markup=False)
                self._wait()  # the results go back to the model: a new request
            case FallbackChunk(notice=notice):
                self.pause()
                self._console.print(f"[{notice.kind}] {notice.message}", style="yellow", markup=False)
            case ContextCompactedChunk():
                from ironhive.cli.render import compaction_note

                self.pause()
                self._console.print(compaction_note(chunk), style="dim", markup=False)
            case AddendumChunk(text=text):
                self.pause()
                self._console.print(text, style="dim", markup=False)
            case _:
                pass

    def finish(self, turn: TurnRecord, session_id: str | None) -> None:
        """Print the rest of the answer and say when it was cut short."""
        self.pause()
        if (note := cut_short(turn.finish_reason)) is not None:
            self._console.print(f"[answer cut short: {note}]", style="yellow", markup=False)

    def fail(self, message: str, code: int) -> None:
        """Print what was received and what went wrong (one line)."""
        self.pause()
        if code == 130:
            self._console.print("Cancelled.", style="yellow")
        else:
            self._console.print(f"Error: {message}", style="red", markup=False)

    def pause(self) -> None:
        """Stop the spinner and print the pending text for good, so the terminal is free (for a question, say)."""
        self._stop_spinner()
        self._end_line()
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        if self._live is not None:
            self._live.stop()  # transient: the live tail is erased and printed once below
            self._live = None
        if self._pending.strip():
            self._print(self._lines_of(self._pending)[self._tail_printed :])
        self._pending = ""
        self._tail_printed = 0
        self._blocks_done = 0

    def _end_line(self) -> None:
        """End a line that shown thinking left open, so what follows starts at the left margin."""
        if self._mid_line:
            self._console.print()
            self._mid_line = False

    def _wait(self) -> None:
        from rich.live import Live

        if self._spinner is None:
            self._spinner = Live(
                _Waiting(self._now(), self._now),
                console=self._console,
                refresh_per_second=10,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._spinner.start()

    def _stop_spinner(self) -> None:
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None

    def _append(self, text: str) -> None:
        self._pending += text
        if self._live is None:
            from rich.live import Live

            self._end_line()
            self._live = Live(
                console=self._console,
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        wait = self._last_refresh + REFRESH_SECONDS - self._now()
        if wait <= 0:
            self._refresh()
        elif self._scheduled is None:
            self._scheduled = asyncio.get_running_loop().call_later(wait, self._refresh)

    def _refresh(self) -> None:
        self._scheduled = None
        if self._live is None:
            return
        self._last_refresh = self._now()
        blocks, self._pending = split_finished(self._pending)
        for block in blocks:
            self._print(self._lines_of(block)[self._tail_printed :])
            self._tail_printed = 0
            self._blocks_done += 1
        lines = self._lines_of(self._pending) if self._pending.strip() else []
        window = max(3, self._console.height - 4)
        overflow = len(lines) - self._tail_printed - window
        if overflow > 0:  # the lines that scroll out of the window are printed for good
            self._print(lines[self._tail_printed : self._tail_printed + overflow])
            self._tail_printed += overflow
        self._live.update(_Lines(lines[self._tail_printed :]), refresh=True)

    def _lines_of(self, source: str) -> list[list[Segment]]:
        """A block's lines as printed: a blank line above all but the answer's first block, then its Markdown."""
        from rich.markdown import Markdown

        lines = self._console.render_lines(Markdown(source), self._console.options, pad=False)
        while lines and _blank(lines[0]):
            lines.pop(0)
        while lines and _blank(lines[-1]):
            lines.pop()
        return [[], *lines] if self._blocks_done else lines

    def _print(self, lines: list[list[Segment]]) -> None:
        if lines:
            self._console.print(_Lines(lines))
