"""Fuzzing the protocol readers: any input parses to a model (that round-trips) or raises UnreadableLineError."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.protocol.models import (
    DEFAULT_PROTOCOL,
    ProtocolRegistry,
    ServerEvent,
    ServerRequest,
    UnreadableLineError,
)

FUZZ = settings(max_examples=300, deadline=None)
SMALL_LIMIT = DEFAULT_PROTOCOL.with_max_line_bytes(160)

ANY_CHAR = st.characters(exclude_categories=())  # includes lone surrogates
ANY_TEXT = st.text(alphabet=ANY_CHAR, max_size=40)
HUGE_TEXT = st.builds(lambda n, c: c * n, st.integers(1_000, 40_000), st.sampled_from(["x", "€", "😀", '"', "\\"]))
JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
JUNK = JSON_VALUE | HUGE_TEXT | st.sampled_from(["yes", "true", "1", "", [], {}, [None], {"type": "cancel"}, 1.5, -1])

VALID_REQUESTS: list[dict[str, Any]] = [
    {"type": "user_message", "content": "hi", "model": None},
    {
        "type": "user_message",
        "content": "hi",
        "model": "m",
        "options": {
            "tool_names": ["read_file"],
            "tool_mode": "auto",
            "reasoning_effort": "low",
            "temperature": 0.2,
            "max_output_tokens": 5,
        },
    },
    {"type": "context_update", "working_path": "/w", "selected_items": ["a"]},
    {"type": "hitl_response", "approved": True, "reason": None, "id": "i", "modified_arguments": {"k": [1, {"a": 2}]}},
    {"type": "hitl_response", "approved": False, "always_approve": True},
    {"type": "cancel"},
    {"type": "shutdown"},
]
VALID_EVENTS: list[dict[str, Any]] = [
    {"type": "session_started", "session_id": "s"},
    {"type": "text_delta", "content": "t"},
    {"type": "tool_start", "tool": "t", "input": {"a": 1}, "call_id": "c"},
    {"type": "tool_end", "tool": "t", "success": True, "output": "o", "call_id": "c"},
    {"type": "hitl_request", "id": "i", "action": "a", "target": "t", "description": "d", "arguments": {"x": None}},
    {"type": "turn_end", "input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    {"type": "fallback", "kind": "retry", "provider_index": 0, "total_providers": 1, "category": "c", "message": "m"},
    {"type": "plan_created", "plan_id": "p", "step_count": 1, "step_descriptions": ["s"]},
    {"type": "context_compacted", "tokens_before": 10, "summary_used": True},
]
FIELD_NAMES = sorted(
    {
        name
        for cls in [*DEFAULT_PROTOCOL.requests.values(), *DEFAULT_PROTOCOL.events.values()]
        for name in cls.model_fields
    }
    | {"options", "Content", "TYPE"}
)
SURROGATE_ESCAPES = st.sampled_from(["\\ud800", "\\udfff", "\\ud83d", "\\ude00\\ud83d", "\\u0000", "\\ud800\\u0041"])


@st.composite
def mutated_line(draw: st.DrawFn, valid: list[dict[str, Any]]) -> str:
    """A JSON line made from a valid object by dropping, retyping, adding and nesting fields, then maybe breaking it."""
    obj: dict[str, Any] = json.loads(json.dumps(draw(st.sampled_from(valid))))
    for _ in range(draw(st.integers(0, 4))):
        operation = draw(st.sampled_from(["drop", "set", "nest", "add"]))
        if operation == "drop" and obj:
            del obj[draw(st.sampled_from(sorted(obj)))]
        elif operation == "set":
            obj[draw(st.sampled_from(FIELD_NAMES))] = draw(JUNK)
        elif operation == "nest":
            target = draw(st.sampled_from(["options", "modified_arguments", "arguments", "input"]))
            obj[target] = {draw(st.sampled_from(FIELD_NAMES)): draw(JUNK)}
        else:
            obj[draw(st.text(max_size=8))] = draw(JUNK)
    keys = draw(st.permutations(sorted(obj)))
    line = json.dumps({key: obj[key] for key in keys}, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 4)) == 0:
        quote = draw(st.sampled_from([i for i, c in enumerate(line) if c == '"'] or [0]))
        line = line[: quote + 1] + draw(SURROGATE_ESCAPES) + line[quote + 1 :]
    if draw(st.integers(0, 7)) == 0:
        line = line[: draw(st.integers(0, len(line)))]
    return line


def _request_or_unreadable(protocol: ProtocolRegistry, line: str | bytes) -> None:
    try:
        request = protocol.parse_request(line)
    except UnreadableLineError as exc:
        assert 0 < len(str(exc)) <= 200
        return
    assert isinstance(request, ServerRequest)
    again = protocol.serialize_request(request)
    assert "\n" not in again
    assert protocol.parse_request(again) == request


def _event_or_unreadable(protocol: ProtocolRegistry, line: str | bytes) -> None:
    try:
        event = protocol.parse_event(line)
    except UnreadableLineError as exc:
        assert 0 < len(str(exc)) <= 200
        return
    assert isinstance(event, ServerEvent)
    again = protocol.serialize_event(event)
    again.encode("utf-8")
    assert protocol.parse_event(again) == event


@FUZZ
@given(st.text(alphabet=ANY_CHAR, max_size=200))
def test_arbitrary_text(line: str) -> None:
    _request_or_unreadable(DEFAULT_PROTOCOL, line)
    _event_or_unreadable(DEFAULT_PROTOCOL, line)


@FUZZ
@given(st.binary(max_size=200))
def test_arbitrary_bytes(line: bytes) -> None:
    _request_or_unreadable(DEFAULT_PROTOCOL, line)
    _event_or_unreadable(DEFAULT_PROTOCOL, line)


@FUZZ
@given(ANY_TEXT, st.sampled_from(['{"type":"user_message","content":"', '{"type":"context_update","working_path":"']))
def test_raw_characters_inside_a_string_value(text: str, prefix: str) -> None:
    line = prefix + text + '"}'
    _request_or_unreadable(DEFAULT_PROTOCOL, line)
    _request_or_unreadable(DEFAULT_PROTOCOL, line.encode("utf-8", "surrogatepass"))


@FUZZ
@given(mutated_line(VALID_REQUESTS))
def test_mutated_requests(line: str) -> None:
    _request_or_unreadable(DEFAULT_PROTOCOL, line)
    _request_or_unreadable(SMALL_LIMIT, line)


@FUZZ
@given(mutated_line(VALID_EVENTS))
def test_mutated_events(line: str) -> None:
    _event_or_unreadable(DEFAULT_PROTOCOL, line)


@pytest.mark.parametrize("obj", VALID_REQUESTS + VALID_EVENTS)
def test_the_seeds_are_valid(obj: dict[str, Any]) -> None:
    protocol = DEFAULT_PROTOCOL
    parsed = protocol.parse_request(json.dumps(obj)) if obj in VALID_REQUESTS else protocol.parse_event(json.dumps(obj))
    assert parsed.type == obj["type"]
