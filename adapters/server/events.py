"""Turns the agent loop's chunk stream into turn-stream protocol events (the same mapping for stdio and HTTP)."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from ironhive.domain.turn import (
    AddendumChunk,
    AgentChunk,
    ContextCompactedChunk,
    FallbackChunk,
    TextDelta,
    ThinkingDelta,
    ToolCallChunk,
    ToolResultChunk,
    TurnCompleted,
    UsageChunk,
    cut_reason,
)
from ironhive.ports.chat import FinishReason, JsonValue, ToolCallPart, Usage
from ironhive.protocol.models import (
    AddendumEvent,
    ContextCompactedEvent,
    FallbackEvent,
    ServerEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolEndEvent,
    ToolStartEvent,
    TurnEndEvent,
    cap_tool_output,
)


def wire_input(call: ToolCallPart) -> JsonValue:
    """A call's arguments as ``tool_start.input``: the parsed object, else the raw text (null when empty).

    Every string (a top-level argument, or the raw text) is capped at 8 KB as ``tool_end.output`` is, so a file write
    does not put megabytes on one line.
    """
    if call.arguments is None:
        return cap_tool_output(call.arguments_text) if call.arguments_text.strip() else None
    return {name: cap_tool_output(value) if isinstance(value, str) else value for name, value in call.arguments.items()}


async def to_server_events(chunks: AsyncIterable[AgentChunk]) -> AsyncIterator[ServerEvent]:
    """Map one turn's chunks to events, ending with exactly one ``turn_end`` carrying the summed usage.

    Every call whose outcome is known gets its ``tool_end`` before ``turn_end``; a call whose outcome is unknown gets
    none.

    Args:
        chunks: The turn's chunk stream (``AgentLoop.run_streaming``).

    Yields:
        The protocol events of the turn.
    """
    usage = Usage()
    finish_reason: FinishReason | None = None
    ended: set[str] = set()
    async for chunk in chunks:
        match chunk:
            case TextDelta(text=text):
                yield TextDeltaEvent(content=text)
            case ThinkingDelta(text=text):
                yield ThinkingDeltaEvent(content=text)
            case ToolCallChunk(call=call):
                yield ToolStartEvent(tool=call.name, input=wire_input(call), call_id=call.call_id)
            case ToolResultChunk(record=record) if record.success is not None:
                ended.add(record.call_id)
                yield ToolEndEvent(
                    tool=record.name, success=record.success, output=record.result, call_id=record.call_id
                )
            case UsageChunk(usage=reported):
                usage = usage + reported
            case AddendumChunk(text=text):
                yield AddendumEvent(content=text)
            case ContextCompactedChunk():
                yield ContextCompactedEvent(
                    tokens_before=chunk.tokens_before,
                    tokens_after=chunk.tokens_after,
                    messages_summarized=chunk.messages_summarized,
                    messages_dropped=chunk.messages_dropped,
                    summary_used=chunk.summary_used,
                    parts_cut=chunk.parts_cut,
                    chars_cut=chunk.chars_cut,
                )
            case FallbackChunk(notice=notice):
                yield FallbackEvent(
                    kind=notice.kind,
                    provider_index=notice.provider_index,
                    total_providers=notice.total_providers,
                    category=notice.category,
                    message=notice.message,
                    attempt=notice.attempt,
                    max_attempts=notice.max_attempts,
                )
            case TurnCompleted(turn=turn):
                finish_reason = cut_reason(turn.finish_reason)
                for record in turn.tool_calls:
                    if record.success is not None and record.call_id not in ended:
                        yield ToolEndEvent(
                            tool=record.name, success=record.success, output=record.result, call_id=record.call_id
                        )
            case _:
                pass
    yield TurnEndEvent.from_counts(
        usage.input_tokens,
        usage.output_tokens,
        finish_reason=finish_reason,
        cached_input_tokens=usage.cached_input_tokens,
        reasoning_tokens=usage.reasoning_tokens,
    )
