"""Reads the tool calls of a conversation paired with their results, newest last."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ironhive.ports.chat import ChatMessage, JsonValue, Role, ToolCallPart, ToolResultPart


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolExchange:
    """A tool call and the result that answered it."""

    call: ToolCallPart
    result: ToolResultPart


def call_identity(name: str, arguments: Mapping[str, JsonValue] | None) -> str:
    """A call's identity for repetition checks: the tool name and its arguments with keys sorted."""
    return name + "\x00" + json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def current_turn(conversation: Sequence[ChatMessage]) -> Sequence[ChatMessage]:
    """The messages from the latest user message on (the request being answered)."""
    for index in range(len(conversation) - 1, -1, -1):
        if conversation[index].role is Role.USER:
            return conversation[index:]
    return conversation


def tool_exchanges(conversation: Sequence[ChatMessage]) -> list[ToolExchange]:
    """Every answered tool call of ``conversation`` in call order."""
    calls: dict[str, ToolCallPart] = {}
    exchanges: list[ToolExchange] = []
    for message in conversation:
        for call in message.tool_calls:
            calls[call.call_id] = call
        for result in message.tool_results:
            answered = calls.get(result.call_id)
            if answered is not None:
                del calls[result.call_id]
                exchanges.append(ToolExchange(call=answered, result=result))
    return exchanges
