"""Message builders shared by the context tests."""

from __future__ import annotations

import json

from ironhive.domain.tool_calls import make_tool_call
from ironhive.ports.chat import ChatMessage, JsonValue, Role, TextPart, ToolResultPart


def system(text: str) -> ChatMessage:
    return ChatMessage.of_text(Role.SYSTEM, text)


def user(text: str) -> ChatMessage:
    return ChatMessage.of_text(Role.USER, text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage.of_text(Role.ASSISTANT, text)


def exchange(
    call_id: str,
    name: str,
    result: str,
    *,
    arguments: dict[str, JsonValue] | None = None,
    success: bool | None = True,
    text: str = "",
) -> list[ChatMessage]:
    """An assistant message with one call and the tool message answering it."""
    call = make_tool_call(call_id, name, json.dumps(arguments or {}))
    parts = ((TextPart(text=text),) if text else ()) + (call,)
    return [
        ChatMessage(role=Role.ASSISTANT, parts=parts),
        ChatMessage(
            role=Role.TOOL, parts=(ToolResultPart(call_id=call_id, name=name, result=result, success=success),)
        ),
    ]


def lines(count: int, width: int = 40, prefix: str = "line") -> str:
    """``count`` numbered lines of about ``width`` chars, joined by newlines."""
    return "\n".join(f"{prefix} {index:05d} ".ljust(width, "x") for index in range(count))


def results(messages: list[ChatMessage] | tuple[ChatMessage, ...]) -> list[str]:
    """Every tool result text, in order."""
    return [part.result for message in messages for part in message.tool_results]
