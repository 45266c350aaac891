"""Observation masking: older tool results become short placeholders naming the call (inventory §D.9 step 3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ironhive.ports.chat import ChatMessage, Role, ToolCallPart, ToolResultPart

MAX_ARGUMENT_CHARS = 200
MASK_PREFIX = "[Masked: "


def masking_scope(messages: Sequence[ChatMessage], *, protected_turns: int, protected_rounds: int | None) -> list[bool]:
    """Decide, per message, whether its tool results are old enough to be masked.

    A result is old when it lies before the start of the ``protected_turns``-th most recent user turn (with fewer user
    turns nothing is old by turns; 0 makes every result old), or, when ``protected_rounds`` is set, when it answers a
    tool round older than the last ``protected_rounds`` rounds, counted across turns, even inside a protected turn.

    Args:
        messages: The conversation, oldest first (injected messages already removed).
        protected_turns: Most recent user turns whose results stay verbatim.
        protected_rounds: Most recent tool rounds whose results stay verbatim; ``None`` turns the rule off.

    Returns:
        One flag per message: ``True`` when its results may be masked.
    """
    users = [index for index, message in enumerate(messages) if message.role is Role.USER]
    if protected_turns == 0:
        boundary = len(messages)
    elif len(users) < protected_turns:
        boundary = 0
    else:
        boundary = users[-protected_turns]
    scope = [index < boundary for index in range(len(messages))]
    if protected_rounds is None:
        return scope
    rounds = [-1] * len(messages)
    current = -1
    for index, message in enumerate(messages):
        if message.role is Role.ASSISTANT and message.tool_calls:
            current += 1
        rounds[index] = current
    oldest_protected = current + 1 - protected_rounds
    return [old or rounds[index] < oldest_protected for index, old in enumerate(scope)]


def calls_by_id(messages: Sequence[ChatMessage]) -> dict[str, ToolCallPart]:
    """Index every tool call of the conversation by its call id."""
    return {call.call_id: call for message in messages if message.role is Role.ASSISTANT for call in message.tool_calls}


def mask_placeholder(result: ToolResultPart, call: ToolCallPart | None) -> str:
    """The text that replaces a masked result: the tool, the result's size, the call's arguments, and a way back."""
    if call is None:
        arguments = "unknown"
    else:
        arguments = " ".join(call.arguments_text.split())
        if len(arguments) > MAX_ARGUMENT_CHARS:
            arguments = arguments[: MAX_ARGUMENT_CHARS - 3] + "..."
    lines = result.result.count("\n") + 1
    return (
        f"{MASK_PREFIX}{result.name} result, {len(result.result)} chars, ~{lines} lines — arguments: {arguments}. "
        "Call the tool again if you need it.]"
    )


def mask_message(message: ChatMessage, calls: Mapping[str, ToolCallPart], *, min_length: int) -> ChatMessage:
    """Mask the results of ``message`` that are at least ``min_length`` chars; the same object when none is."""
    parts = list(message.parts)
    changed = False
    for index, part in enumerate(parts):
        # A placeholder fed back in (a caller re-preparing prepared messages) is left as it is.
        if (
            isinstance(part, ToolResultPart)
            and len(part.result) >= min_length
            and not part.result.startswith(MASK_PREFIX)
        ):
            parts[index] = replace(part, result=mask_placeholder(part, calls.get(part.call_id)))
            changed = True
    return replace(message, parts=tuple(parts)) if changed else message


def mask_observations(
    messages: Sequence[ChatMessage],
    *,
    protected_turns: int = 3,
    protected_rounds: int | None = None,
    min_length: int = 200,
) -> list[ChatMessage]:
    """Return ``messages`` with their old tool results masked (a new list; the input is untouched)."""
    scope = masking_scope(messages, protected_turns=protected_turns, protected_rounds=protected_rounds)
    calls = calls_by_id(messages)
    return [
        mask_message(message, calls, min_length=min_length) if old and message.role is Role.TOOL else message
        for message, old in zip(messages, scope, strict=True)
    ]
