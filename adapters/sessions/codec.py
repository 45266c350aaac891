"""Chat messages to and from versioned snake_case JSON, as sessions store them; and the round-trip time format."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TypeAlias, cast

from ironhive.domain.errors import IronHiveError
from ironhive.ports.chat import (
    ChatMessage,
    ContentPart,
    JsonValue,
    OpaqueState,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)

FORMAT_VERSION = 1
"""The ``v`` of every stored turn; a reader refuses versions it does not know."""

JsonObject: TypeAlias = dict[str, JsonValue]


class SessionDataError(IronHiveError):
    """Stored session data cannot be read (unknown version or malformed content)."""


def encode_part(part: ContentPart) -> JsonObject:
    """One content part as a JSON object discriminated by ``kind``."""
    match part:
        case TextPart(text=text):
            return {"kind": "text", "text": text}
        case ThinkingPart(text=text, opaque=opaque):
            thinking: JsonObject = {"kind": "thinking", "text": text}
            if opaque is not None:
                thinking["opaque"] = _encode_opaque(opaque)
            return thinking
        case ToolCallPart():
            encoded: JsonObject = {
                "kind": "tool_call",
                "call_id": part.call_id,
                "name": part.name,
                "arguments": None if part.arguments is None else dict(part.arguments),
                "arguments_text": part.arguments_text,
            }
            if part.parse_error is not None:
                encoded["parse_error"] = part.parse_error
            if part.opaque is not None:
                encoded["opaque"] = _encode_opaque(part.opaque)
            return encoded
        case ToolResultPart():
            return {
                "kind": "tool_result",
                "call_id": part.call_id,
                "name": part.name,
                "result": part.result,
                "success": part.success,
            }
    raise TypeError(f"Unknown content part: {type(part).__name__}")  # pragma: no cover - the union is closed


def decode_part(data: JsonValue) -> ContentPart:
    """The content part an ``encode_part`` object describes.

    Raises:
        SessionDataError: The object is not a known part.
    """
    fields = _object(data, "part")
    kind = _string(fields, "kind")
    if kind == "text":
        return TextPart(text=_string(fields, "text"))
    if kind == "thinking":
        return ThinkingPart(text=_string(fields, "text"), opaque=_decode_opaque(fields))
    if kind == "tool_call":
        arguments = fields.get("arguments")
        parse_error = fields.get("parse_error")
        return ToolCallPart(
            call_id=_string(fields, "call_id"),
            name=_string(fields, "name"),
            arguments=None if arguments is None else _object(arguments, "arguments"),
            arguments_text=_string(fields, "arguments_text"),
            parse_error=parse_error if isinstance(parse_error, str) else None,
            opaque=_decode_opaque(fields),
        )
    if kind == "tool_result":
        success = fields.get("success")
        if success is not None and not isinstance(success, bool):
            raise SessionDataError("Stored tool result has a non-boolean 'success'")
        return ToolResultPart(
            call_id=_string(fields, "call_id"),
            name=_string(fields, "name"),
            result=_string(fields, "result"),
            success=success,
        )
    raise SessionDataError(f"Stored message part has an unknown kind: {kind!r}")


def encode_message(message: ChatMessage) -> JsonObject:
    """One message as ``{"role": ..., "parts": [...]}``."""
    return {"role": message.role.value, "parts": [encode_part(part) for part in message.parts]}


def decode_message(data: JsonValue) -> ChatMessage:
    """The message an ``encode_message`` object describes.

    Raises:
        SessionDataError: The object is not a message.
    """
    fields = _object(data, "message")
    role_name = _string(fields, "role")
    try:
        role = Role(role_name)
    except ValueError:
        raise SessionDataError(f"Stored message has an unknown role: {role_name!r}") from None
    parts = fields.get("parts")
    if not isinstance(parts, list):
        raise SessionDataError("Stored message has no 'parts' list")
    return ChatMessage(role=role, parts=tuple(decode_part(part) for part in parts))


def encode_turn(messages: Sequence[ChatMessage]) -> str:
    """A turn's messages as one versioned JSON document: ``{"v":1,"messages":[...]}``."""
    document: JsonObject = {"v": FORMAT_VERSION, "messages": [encode_message(message) for message in messages]}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def decode_turn(text: str) -> tuple[ChatMessage, ...]:
    """The messages of an ``encode_turn`` document.

    Raises:
        SessionDataError: The text is not a turn document of a known version.
    """
    document = _object(load_json(text), "turn")
    if document.get("v") != FORMAT_VERSION:
        raise SessionDataError(f"Stored turn has an unsupported format version: {document.get('v')!r}")
    messages = document.get("messages")
    if not isinstance(messages, list):
        raise SessionDataError("Stored turn has no 'messages' list")
    return tuple(decode_message(message) for message in messages)


def load_json(text: str) -> JsonValue:
    """Parse JSON text.

    Raises:
        SessionDataError: The text is not JSON.
    """
    try:
        return cast(JsonValue, json.loads(text))
    except json.JSONDecodeError as error:
        raise SessionDataError(f"Stored session data is not JSON: {error}") from None


def round_trip_time(moment: datetime) -> str:
    """``moment`` in UTC as .NET's round-trip format writes it: ``2026-08-31T00:00:00.0000000Z`` (7 fraction digits)."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    # .NET ticks are 100 ns: one more digit than Python's microseconds, always 0 here.
    return f"{utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond:06d}0Z"


def _encode_opaque(opaque: OpaqueState) -> JsonObject:
    encoded: JsonObject = {"provider": opaque.provider, "data": opaque.data}
    if opaque.model is not None:
        encoded["model"] = opaque.model
    return encoded


def _decode_opaque(fields: JsonObject) -> OpaqueState | None:
    """A part's provider state; absent in records written before parts carried it."""
    if (value := fields.get("opaque")) is None:
        return None
    opaque = _object(value, "provider state")
    model = opaque.get("model")
    if model is not None and not isinstance(model, str):
        raise SessionDataError("Stored provider state has a non-text 'model'")
    return OpaqueState(provider=_string(opaque, "provider"), data=_string(opaque, "data"), model=model)


def _object(value: JsonValue, what: str) -> JsonObject:
    if not isinstance(value, dict):
        raise SessionDataError(f"Stored {what} is not a JSON object")
    return value


def _string(fields: JsonObject, key: str) -> str:
    value = fields.get(key)
    if not isinstance(value, str):
        raise SessionDataError(f"Stored session data lacks the text field {key!r}")
    return value
