"""Renders a turn's chunks on stdout as text, one JSON object (``--output json``) or JSON Lines (``jsonl``)."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TextIO

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
    cut_reason,
    cut_short,
)
from ironhive.ports.chat import ToolCallPart, Usage

if TYPE_CHECKING:
    from rich.console import Console

CANCELLED = "cancelled"

_plain_process = False


def set_plain_output(plain: bool) -> None:
    """``--plain`` for the whole process: every later :func:`color_enabled` says no, wherever it is asked (the
    download bar and the local model's progress line included, which never see the command line)."""
    global _plain_process
    _plain_process = plain


def color_enabled(stream: TextIO | None, *, plain: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    """Whether escape sequences may be written to ``stream``, decided in the order CPython decides it for itself.

    ``--plain`` (``plain`` or :func:`set_plain_output`) and a non-empty ``NO_COLOR`` never allow them, a non-empty
    ``FORCE_COLOR`` always does (a pipe into ``less -R``), ``TERM=dumb`` does not, and otherwise only a terminal does.
    """
    env = os.environ if environ is None else environ
    if plain or _plain_process or env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("TERM") == "dumb" or stream is None:
        return False
    try:
        return stream.isatty()
    except (OSError, ValueError, AttributeError):
        return False


def rich_console(stream: TextIO | None = None, *, plain: bool = False, **options: Any) -> Console:
    """A rich console on ``stream`` (stdout by default) that writes escape sequences only when :func:`color_enabled`.

    Without colour it keeps its layout (box lines, widths) but writes no style, colour or cursor movement.
    """
    from rich.console import Console

    out = stream or sys.stdout
    if color_enabled(out, plain=plain):
        return Console(file=out, force_terminal=True, **options)
    return Console(file=out, force_terminal=False, color_system=None, **options)


def compact_json(value: object) -> str:
    """One line of JSON without spaces, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def without_nulls(fields: dict[str, object]) -> dict[str, object]:
    """``fields`` without the keys whose value is ``None``."""
    return {key: value for key, value in fields.items() if value is not None}


def usage_json(usage: Usage) -> dict[str, object] | None:
    """The camelCase usage object, or ``None`` when the provider reported nothing; the cached and reasoning parts only
    when reported."""
    if usage.total_tokens is None:
        return None
    details: dict[str, object] = {
        "cachedInputTokens": usage.cached_input_tokens,
        "reasoningTokens": usage.reasoning_tokens,
    }
    totals: dict[str, object] = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
    }
    return totals | without_nulls(details)


def usage_text(usage: Usage) -> str:
    """``--show-tokens``' line: ``Tokens: 812 in (512 cached) / 40 out (32 reasoning) / 852 total`` (``?`` unknown)."""

    def shown(value: int | None) -> str:
        return "?" if value is None else str(value)

    cached = "" if usage.cached_input_tokens is None else f" ({usage.cached_input_tokens} cached)"
    reasoning = "" if usage.reasoning_tokens is None else f" ({usage.reasoning_tokens} reasoning)"
    return (
        f"Tokens: {shown(usage.input_tokens)} in{cached} / {shown(usage.output_tokens)} out{reasoning} / "
        f"{shown(usage.total_tokens)} total"
    )


def compaction_note(chunk: ContextCompactedChunk) -> str:
    """One line telling a person what compaction did."""
    how = "summarised" if chunk.summary_used else "left out"
    count = chunk.messages_summarized if chunk.summary_used else chunk.messages_dropped
    return f"[context compacted: {chunk.tokens_before} → {chunk.tokens_after} tokens, {count} messages {how}]"


def replay(turn: TurnRecord) -> Iterator[AgentChunk]:
    """Chunks that describe a turn that ran without streaming: its tool calls, then its answer."""
    for record in turn.tool_calls:
        call = ToolCallPart(
            call_id=record.call_id, name=record.name, arguments=None, arguments_text=record.arguments_text
        )
        yield ToolCallChunk(call=call)
        yield ToolResultChunk(record=record)
    if turn.content:
        yield TextDelta(text=turn.content)
    if turn.addendum:
        yield AddendumChunk(text=turn.addendum)


class Renderer(Protocol):
    """Writes one turn's output."""

    def start(self, session_id: str | None) -> None:
        """Called once before the turn runs."""
        ...

    def chunk(self, chunk: AgentChunk) -> None:
        """Called for every chunk as it arrives."""
        ...

    def finish(self, turn: TurnRecord, session_id: str | None) -> None:
        """Called once when the turn succeeded."""
        ...

    def fail(self, message: str, code: int) -> None:
        """Called once instead of ``finish`` when the turn failed (code 1) or was cancelled (code 130)."""
        ...


class JsonRenderer:
    """``--output json``: one compact camelCase object, null fields omitted."""

    def __init__(self, *, show_thinking: bool, out: TextIO | None = None) -> None:
        self._show_thinking = show_thinking
        self._out = out or sys.stdout

    def start(self, session_id: str | None) -> None:
        """Nothing is written before the turn ends."""

    def chunk(self, chunk: AgentChunk) -> None:
        """Nothing is written before the turn ends."""

    def finish(self, turn: TurnRecord, session_id: str | None) -> None:
        """Write the response object."""
        thinking = None
        if self._show_thinking and turn.thinking:
            thinking = {"content": turn.thinking, "tokenCount": math.ceil(len(turn.thinking) / 4)}
        tool_calls = [
            {"name": call.name, "arguments": call.arguments_text, "result": call.result, "success": call.success}
            for call in turn.tool_calls
        ]
        content = turn.content if not turn.addendum else f"{turn.content}\n\n{turn.addendum}"
        body = without_nulls(
            {
                "content": content,
                "sessionId": session_id,
                "usage": usage_json(turn.usage),
                "thinking": thinking,
                "toolCalls": tool_calls or None,
                "finishReason": cut_reason(turn.finish_reason),
            }
        )
        self._out.write(compact_json(body) + "\n")
        self._out.flush()

    def fail(self, message: str, code: int) -> None:
        """Write the error object."""
        self._out.write(compact_json({"error": message, "code": code}) + "\n")
        self._out.flush()


class JsonlRenderer:
    """``--output jsonl``: one compact object per event, ``start`` first, ``done`` or ``error`` last."""

    def __init__(self, *, show_thinking: bool, out: TextIO | None = None) -> None:
        self._show_thinking = show_thinking
        self._out = out or sys.stdout

    def _line(self, fields: dict[str, object]) -> None:
        self._out.write(compact_json(fields) + "\n")
        self._out.flush()

    def start(self, session_id: str | None) -> None:
        """Write the ``start`` line."""
        self._line(without_nulls({"type": "start", "sessionId": session_id}))

    def chunk(self, chunk: AgentChunk) -> None:
        """Write the line of one chunk, if it has one."""
        match chunk:
            case TextDelta(text=text):
                self._line({"type": "text", "content": text})
            case ThinkingDelta(text=text) if self._show_thinking:
                self._line({"type": "thinking", "content": text})
            case ToolCallChunk(call=call):
                self._line(
                    {"type": "tool_call", "id": call.call_id, "name": call.name, "arguments": call.arguments_text}
                )
            case ToolResultChunk(record=record):
                self._line(
                    {
                        "type": "tool_result",
                        "id": record.call_id,
                        "name": record.name,
                        "success": record.success,
                        "result": record.result,
                    }
                )
            case AddendumChunk(text=text):
                self._line({"type": "addendum", "content": text})
            case ContextCompactedChunk():
                self._line(
                    {
                        "type": "context_compacted",
                        "tokensBefore": chunk.tokens_before,
                        "tokensAfter": chunk.tokens_after,
                        "messagesSummarized": chunk.messages_summarized,
                        "messagesDropped": chunk.messages_dropped,
                        "summaryUsed": chunk.summary_used,
                    }
                )
            case FallbackChunk(notice=notice):
                self._line(
                    {
                        "type": "fallback",
                        "kind": notice.kind,
                        "category": notice.category,
                        "providerIndex": notice.provider_index,
                        "totalProviders": notice.total_providers,
                        "attempt": notice.attempt,
                        "maxAttempts": notice.max_attempts,
                        "message": notice.message,
                    }
                )
            case _:
                pass

    def finish(self, turn: TurnRecord, session_id: str | None) -> None:
        """Write the ``done`` line."""
        self._line(
            without_nulls({"type": "done", "sessionId": session_id, "finishReason": cut_reason(turn.finish_reason)})
        )

    def fail(self, message: str, code: int) -> None:
        """Write the ``error`` line instead of ``done``."""
        self._line({"type": "error", "error": message})


class RunJsonRenderer:
    """``ironhive run --json``: one indented snake_case object (``content``, ``thinking``, ``usage``)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout

    def start(self, session_id: str | None) -> None:
        """Nothing is written before the turn ends."""

    def chunk(self, chunk: AgentChunk) -> None:
        """Nothing is written before the turn ends."""

    def finish(self, turn: TurnRecord, session_id: str | None) -> None:
        """Write the response object."""
        usage = turn.usage
        body = {
            "content": turn.content,
            "thinking": {"content": turn.thinking, "token_count": math.ceil(len(turn.thinking) / 4)}
            if turn.thinking
            else None,
            "usage": None
            if usage.total_tokens is None
            else {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "total_tokens": usage.total_tokens,
            }
            | without_nulls(
                {"cached_input_tokens": usage.cached_input_tokens, "reasoning_tokens": usage.reasoning_tokens}
            ),
        }
        if (reason := cut_reason(turn.finish_reason)) is not None:
            body["finish_reason"] = reason
        self._out.write(json.dumps(body, ensure_ascii=False, indent=2) + "\n")
        self._out.flush()

    def fail(self, message: str, code: int) -> None:
        """Write the error object."""
        self._out.write(json.dumps({"error": message}, ensure_ascii=False, indent=2) + "\n")
        self._out.flush()


class TextRenderer:
    """``--output text``: the answer as it streams, tool calls on their own lines, diagnostics on stderr."""

    def __init__(
        self,
        *,
        show_thinking: bool,
        show_tokens: bool,
        plain: bool,
        show_tools: bool = True,
        out: TextIO | None = None,
        err: TextIO | None = None,
    ) -> None:
        self._show_tools = show_tools
        self._show_thinking = show_thinking
        self._show_tokens = show_tokens
        self._out = out or sys.stdout
        self._err = err or sys.stderr
        self._color = color_enabled(self._out, plain=plain)
        self._plain = plain
        self._at_line_start = True
        self._thinking_open = False

    def _write(self, text: str) -> None:
        if text:
            self._out.write(text)
            self._out.flush()
            self._at_line_start = text.endswith("\n")

    def _line(self, text: str, style: str = "2") -> None:
        if not self._at_line_start:
            self._write("\n")
        self._write(f"\x1b[{style}m{text}\x1b[0m\n" if self._color else f"{text}\n")

    def start(self, session_id: str | None) -> None:
        """Nothing to write before the answer."""

    def chunk(self, chunk: AgentChunk) -> None:
        """Write one chunk as it arrives."""
        match chunk:
            case ThinkingDelta(text=text) if self._show_thinking:
                if not self._thinking_open:
                    self._line("[Thinking]" if self._plain else "Thinking...")
                    self._thinking_open = True
                self._write(text)
            case TextDelta(text=text):
                if self._thinking_open:
                    self._line("Response:")
                    self._thinking_open = False
                self._write(text)
            case ToolCallChunk(call=call) if self._show_tools:
                arrow = "->" if self._plain else "→"
                self._line(f"{arrow} Calling tool: {call.name}")
            case ToolResultChunk(record=record) if record.success is False and self._show_tools:
                first_line = record.result.strip().splitlines()[0] if record.result.strip() else "failed"
                self._line(f"  {record.name} failed: {first_line[:200]}", style="33")
            case AddendumChunk(text=text):
                self._line(text)
            case FallbackChunk(notice=notice):
                self._err.write(f"[{notice.kind}] {notice.message}\n")
                self._err.flush()
            case ContextCompactedChunk():
                self._err.write(compaction_note(chunk) + "\n")
                self._err.flush()
            case _:
                pass

    def finish(self, turn: TurnRecord, session_id: str | None) -> None:
        """End the answer's line, say on stderr when it was cut short and, with ``--show-tokens``, the token counts."""
        if not self._at_line_start:
            self._write("\n")
        if (note := cut_short(turn.finish_reason)) is not None:
            self._err.write(f"[answer cut short: {note}]\n")
            self._err.flush()
        if self._show_tokens:
            self._write(usage_text(turn.usage) + "\n")

    def fail(self, message: str, code: int) -> None:
        """Write the error on stderr."""
        if not self._at_line_start:
            self._write("\n")
        self._err.write("Cancelled.\n" if code == 130 else f"Error: {message}\n")
        self._err.flush()


class ClosedPipeTolerant:
    """Wraps a renderer so that a reader leaving early (``ironhive -p ... | head -1``) ends nothing.

    The first ``BrokenPipeError`` points the process's stdout at the null device and repeats the call there (so what
    it also writes on stderr, such as an error, still appears); later output is dropped. The turn goes on and is
    saved, as its tools may already have changed files, and no traceback reaches stderr (also not from the flush at
    interpreter exit). Like ``git log | head``, the run then ends quietly.

    Args:
        inner: The renderer of the requested format.
        out: The stream to redirect (stdout by default); only a stream with a real descriptor can be redirected.
    """

    def __init__(self, inner: Renderer, out: TextIO | None = None) -> None:
        self._inner = inner
        self._out = out or sys.stdout
        self.reader_gone = False

    def start(self, session_id: str | None) -> None:
        """As the wrapped renderer."""
        self._guarded(lambda: self._inner.start(session_id))

    def chunk(self, chunk: AgentChunk) -> None:
        """As the wrapped renderer."""
        self._guarded(lambda: self._inner.chunk(chunk))

    def finish(self, turn: TurnRecord, session_id: str | None) -> None:
        """As the wrapped renderer."""
        self._guarded(lambda: self._inner.finish(turn, session_id))

    def fail(self, message: str, code: int) -> None:
        """As the wrapped renderer."""
        self._guarded(lambda: self._inner.fail(message, code))

    def _guarded(self, call: Callable[[], None]) -> None:
        try:
            call()
        except BrokenPipeError:
            if self.reader_gone:
                raise  # the null device does not break: this pipe is another one
            self.reader_gone = True
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._out.fileno())
            finally:
                os.close(null)
            call()
