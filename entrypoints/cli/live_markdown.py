"""Streams an answer on a terminal as live-rendered Markdown, with tool calls and notices on their own lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    from rich.console import Console
    from rich.live import Live


class LiveMarkdownRenderer:
    """The terminal renderer of the interactive mode: Markdown that re-renders as the text streams in.

    The live area is closed before anything else is printed (a tool call, an approval prompt, a notice), so prompts
    never end up inside a redrawn region.
    """

    def __init__(self, console: Console, *, show_thinking: bool) -> None:
        self._console = console
        self._show_thinking = show_thinking
        self._live: Live | None = None
        self._text = ""

    def start(self, session_id: str | None) -> None:
        """Nothing to show before the answer."""

    def chunk(self, chunk: AgentChunk) -> None:
        """Show one chunk."""
        match chunk:
            case TextDelta(text=text):
                self._append(text)
            case ThinkingDelta(text=text) if self._show_thinking:
                self._close()
                self._console.print(text, style="dim italic", end="")
            case ToolCallChunk(call=call):
                self._close()
                self._console.print(f"→ Calling tool: {call.name}", style="cyan")
            case ToolResultChunk(record=record) if record.success is False:
                self._close()
                first = record.result.strip().splitlines()[0] if record.result.strip() else "failed"
                self._console.print(f"  {record.name} failed: {first[:200]}", style="yellow", markup=False)
            case FallbackChunk(notice=notice):
                self._close()
                self._console.print(f"[{notice.kind}] {notice.message}", style="yellow", markup=False)
            case ContextCompactedChunk():
                from ironhive.cli.render import compaction_note

                self._close()
                self._console.print(compaction_note(chunk), style="dim", markup=False)
            case AddendumChunk(text=text):
                self._close()
                self._console.print(text, style="dim", markup=False)
            case _:
                pass

    def finish(self, turn: TurnRecord, session_id: str | None) -> None:
        """Close the live area and say when the answer was cut short."""
        self._close()
        if (note := cut_short(turn.finish_reason)) is not None:
            self._console.print(f"[answer cut short: {note}]", style="yellow", markup=False)

    def fail(self, message: str, code: int) -> None:
        """Close the live area and show what went wrong."""
        self._close()
        if code == 130:
            self._console.print("Interrupted.", style="yellow")
        else:
            self._console.print(f"Error: {message}", style="red", markup=False)

    def _append(self, text: str) -> None:
        from rich.live import Live
        from rich.markdown import Markdown

        self._text += text
        if self._live is None:
            self._live = Live(console=self._console, refresh_per_second=12, vertical_overflow="visible")
            self._live.start()
        self._live.update(Markdown(self._text))

    def _close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        self._text = ""
