"""Pure mapping of Anthropic Messages API responses (raw stream events, whole messages) onto ironhive chat types."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from anthropic.types import (
    InputJSONDelta,
    Message,
    MessageDeltaUsage,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStreamEvent,
    RedactedThinkingBlock,
    SignatureDelta,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
)
from anthropic.types import Usage as SdkUsage

from ironhive.adapters.anthropic.reasoning import redacted_part, signed_part
from ironhive.domain.tool_calls import make_tool_call
from ironhive.ports.chat import (
    ChatMessage,
    ChatResponse,
    ChatUpdate,
    ContentPart,
    FinishReason,
    Role,
    TextPart,
    ThinkingPart,
    Usage,
)

_STOP_REASONS: Mapping[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def to_finish_reason(raw: str | None) -> FinishReason | None:
    """Map the API's ``stop_reason``; an unknown reason counts as a normal stop."""
    return None if raw is None else _STOP_REASONS.get(raw, "stop")


def to_usage(usage: SdkUsage) -> Usage:
    """Map the API's token counts; input includes the tokens written to and read from the prompt cache."""
    cached = (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    return Usage(
        input_tokens=usage.input_tokens + cached,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cache_read_input_tokens,
    )


@dataclass(slots=True)
class _OpenBlock:
    kind: str
    call_id: str = ""
    name: str = ""
    start_input: str = ""
    fragments: list[str] = field(default_factory=list)
    signature: str = ""
    data: str = ""


class StreamAccumulator:
    """Turns raw stream events into ``ChatUpdate``s, holding each tool call back until its block is complete.

    Text and thinking deltas pass through at once (thinking apart from the answer). Usage is sent once, with the
    ``message_delta`` that ends the message: input (cache tokens included) from ``message_start`` unless the delta
    restates it, output from the delta. A thinking block that closes with its signature (or a redacted one) is sent
    as ``thinking_block``, so the stored message carries what the API needs back.

    Args:
        id_factory: Makes an id for a tool call that arrives without one.
    """

    def __init__(self, id_factory: Callable[[], str]) -> None:
        self._id_factory = id_factory
        self._blocks: dict[int, _OpenBlock] = {}
        self._tokens = {"input": 0, "cache_creation": 0, "cache_read": 0, "output": 0}
        self._usage_known = False
        self._cache_read_known = False
        self._usage_sent = False

    def feed(self, event: RawMessageStreamEvent) -> list[ChatUpdate]:
        """Read one event and return the updates it completes (often one, sometimes none)."""
        if isinstance(event, RawMessageStartEvent):
            usage = event.message.usage
            self._count(usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens)
            self._tokens["output"] = usage.output_tokens
            return []
        if isinstance(event, RawContentBlockStartEvent):
            return self._start(event)
        if isinstance(event, RawContentBlockDeltaEvent):
            return self._delta(event)
        if isinstance(event, RawContentBlockStopEvent):
            block = self._blocks.pop(event.index, None)
            return self._close(block) if block is not None else []
        if isinstance(event, RawMessageDeltaEvent):
            return self._message_delta(event.delta.stop_reason, event.usage)
        return []

    def finish(self) -> list[ChatUpdate]:
        """Flush the tool calls of a stream that ended before their blocks were closed."""
        open_blocks = [self._blocks.pop(index) for index in sorted(self._blocks)]
        return [update for block in open_blocks for update in self._close(block)]

    def _start(self, event: RawContentBlockStartEvent) -> list[ChatUpdate]:
        block = event.content_block
        if isinstance(block, TextBlock):
            self._blocks[event.index] = _OpenBlock(kind="text")
            return [ChatUpdate(text_delta=block.text)] if block.text else []
        if isinstance(block, ThinkingBlock):
            self._blocks[event.index] = _OpenBlock(kind="thinking", signature=block.signature)
            self._blocks[event.index].fragments.append(block.thinking)
            return [ChatUpdate(thinking_delta=block.thinking)] if block.thinking else []
        if isinstance(block, RedactedThinkingBlock):
            self._blocks[event.index] = _OpenBlock(kind="redacted_thinking", data=block.data)
        elif isinstance(block, ToolUseBlock):
            # Some proxies send the whole input here instead of as input_json_delta pieces.
            start_input = json.dumps(block.input) if block.input else ""
            self._blocks[event.index] = _OpenBlock(
                kind="tool_use", call_id=block.id, name=block.name, start_input=start_input
            )
        return []

    def _delta(self, event: RawContentBlockDeltaEvent) -> list[ChatUpdate]:
        delta = event.delta
        block = self._blocks.get(event.index)
        if isinstance(delta, TextDelta):
            return [ChatUpdate(text_delta=delta.text)] if delta.text else []
        if isinstance(delta, ThinkingDelta):
            if block is not None:
                block.fragments.append(delta.thinking)
            return [ChatUpdate(thinking_delta=delta.thinking)] if delta.thinking else []
        if block is not None and isinstance(delta, SignatureDelta):
            block.signature += delta.signature
        elif block is not None and isinstance(delta, InputJSONDelta):
            block.fragments.append(delta.partial_json)
        return []

    def _close(self, block: _OpenBlock) -> list[ChatUpdate]:
        if block.kind == "tool_use":
            arguments = "".join(block.fragments) or block.start_input
            call = make_tool_call(block.call_id or self._id_factory(), block.name, arguments)
            return [ChatUpdate(tool_calls=(call,))]
        if block.kind == "thinking" and block.signature:
            return [ChatUpdate(thinking_block=signed_part("".join(block.fragments), block.signature))]
        if block.kind == "redacted_thinking" and block.data:
            return [ChatUpdate(thinking_block=redacted_part(block.data))]
        return []

    def _message_delta(self, stop_reason: str | None, usage: MessageDeltaUsage) -> list[ChatUpdate]:
        self._count(usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens)
        self._tokens["output"] = usage.output_tokens
        updates = [ChatUpdate(finish_reason=to_finish_reason(stop_reason))] if stop_reason is not None else []
        if not self._usage_sent:
            self._usage_sent = True
            tokens = self._tokens
            total_input = tokens["input"] + tokens["cache_creation"] + tokens["cache_read"]
            usage_update = Usage(
                input_tokens=total_input if self._usage_known else None,
                output_tokens=tokens["output"],
                cached_input_tokens=tokens["cache_read"] if self._cache_read_known else None,
            )
            updates.append(ChatUpdate(usage=usage_update))
        return updates

    def _count(self, fresh: int | None, cache_creation: int | None, cache_read: int | None) -> None:
        # message_delta restates these cumulatively when it carries them; a missing field keeps the earlier count.
        for key, value in (("input", fresh), ("cache_creation", cache_creation), ("cache_read", cache_read)):
            if value is not None:
                self._tokens[key] = value
                self._usage_known = True
        if cache_read is not None:
            self._cache_read_known = True


def to_chat_response(message: Message, id_factory: Callable[[], str]) -> ChatResponse:
    """Map a whole (non-streamed) message onto a ``ChatResponse``.

    Args:
        message: The API's answer.
        id_factory: Makes an id for a tool call that arrives without one.
    """
    parts: list[ContentPart] = []
    for block in message.content:
        if isinstance(block, ThinkingBlock) and block.signature:
            parts.append(signed_part(block.thinking, block.signature))
        elif isinstance(block, ThinkingBlock) and block.thinking:
            parts.append(ThinkingPart(text=block.thinking))
        elif isinstance(block, RedactedThinkingBlock) and block.data:
            parts.append(redacted_part(block.data))
        elif isinstance(block, TextBlock) and block.text:
            parts.append(TextPart(text=block.text))
        elif isinstance(block, ToolUseBlock):
            parts.append(make_tool_call(block.id or id_factory(), block.name, json.dumps(block.input)))
    return ChatResponse(
        message=ChatMessage(role=Role.ASSISTANT, parts=tuple(parts)),
        usage=to_usage(message.usage),
        finish_reason=to_finish_reason(message.stop_reason),
    )


__all__ = ["StreamAccumulator", "to_chat_response", "to_finish_reason", "to_usage"]
