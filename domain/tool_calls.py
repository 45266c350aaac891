"""Builds tool calls from the arguments text a model sent, parsing it once for everyone."""

from __future__ import annotations

import json
import uuid

from ironhive.ports.chat import JsonValue, ToolCallPart


def make_tool_call(call_id: str, name: str, arguments_text: str | None) -> ToolCallPart:
    """A complete tool call; unparseable arguments are kept raw with the reason in ``parse_error``.

    Args:
        call_id: The provider's id for the call.
        name: The tool's name.
        arguments_text: The JSON text of the arguments; empty or ``None`` means no arguments.

    Returns:
        The call, with ``arguments`` parsed or ``None`` and ``parse_error`` as "<ErrorType>: <message>".
    """
    text = (arguments_text or "").strip() or "{}"
    try:
        parsed: JsonValue = json.loads(text)
    except json.JSONDecodeError as error:
        return ToolCallPart(
            call_id=call_id, name=name, arguments=None, arguments_text=text, parse_error=f"JSONDecodeError: {error}"
        )
    if not isinstance(parsed, dict):
        return ToolCallPart(
            call_id=call_id,
            name=name,
            arguments=None,
            arguments_text=text,
            parse_error=f"TypeError: the arguments must be a JSON object, not {type(parsed).__name__}",
        )
    return ToolCallPart(call_id=call_id, name=name, arguments=parsed, arguments_text=text)


def new_call_id(prefix: str = "call") -> str:
    """A fresh id for a tool call that arrived without one (``<prefix>_`` and 24 hex digits)."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"
