"""Turn-stream protocol models: exact wire lines (syrupy), round trips, reading rules, output cap, registry."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import ValidationError
from syrupy.assertion import SnapshotAssertion

from ironhive.protocol.models import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_PROTOCOL,
    TOOL_OUTPUT_LIMIT_BYTES,
    AddendumEvent,
    AgentSelectedEvent,
    CancelRequest,
    ContextCompactedEvent,
    ContextUpdateRequest,
    ErrorEvent,
    FallbackEvent,
    HitlRequestEvent,
    HitlResponseRequest,
    PlanCompletedEvent,
    PlanCreatedEvent,
    PlanStepCompletedEvent,
    PlanStepStartedEvent,
    ProtocolRegistry,
    ServerEvent,
    ServerRequest,
    SessionStartedEvent,
    ShutdownRequest,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolEndEvent,
    ToolStartEvent,
    TurnEndEvent,
    TurnOptions,
    TurnRestartedEvent,
    UnknownEvent,
    UnreadableLineError,
    UserMessageRequest,
    cap_tool_output,
    parse_event,
    parse_request,
    serialize_event,
    serialize_request,
)

REQUESTS: dict[str, ServerRequest] = {
    "user_message": UserMessageRequest(content="List the files in src"),
    "user_message_with_model": UserMessageRequest(content="Hi ☃", model="gpt-4o-mini"),
    "user_message_with_options": UserMessageRequest(
        content="Summarize README.md",
        options=TurnOptions(
            tool_names=["read_file"],
            tool_mode="require:read_file",
            reasoning_effort="low",
            temperature=0.2,
            max_output_tokens=512,
        ),
    ),
    "user_message_with_partial_options": UserMessageRequest(content="x", options=TurnOptions(tool_names=[])),
    "user_message_with_empty_options": UserMessageRequest(content="x", options=TurnOptions()),
    "context_update": ContextUpdateRequest(working_path="/home/me/project", selected_items=["src/app.py"]),
    "context_update_cleared": ContextUpdateRequest(),
    "hitl_response_minimal": HitlResponseRequest(approved=False),
    "hitl_response_with_reason": HitlResponseRequest(approved=False, reason="not on prod"),
    "hitl_response_full": HitlResponseRequest(
        approved=True,
        id="3f2a9c0d4b5e4f6a8b7c9d0e1f2a3b4c",
        modified_arguments={"command": "ls -la", "options": {"depth": 2, "flags": [True, None, 1.5]}},
        always_approve=True,
    ),
    "cancel": CancelRequest(),
    "shutdown": ShutdownRequest(),
}

EVENTS: dict[str, ServerEvent] = {
    "session_started": SessionStartedEvent(session_id="9b1f0c6e2d3a4b5c8e7f6a5b4c3d2e1f"),
    "text_delta": TextDeltaEvent(content="Here are the files:\n- ünïcode ✓"),
    "thinking_delta": ThinkingDeltaEvent(content="The user wants a file list; "),
    "addendum": AddendumEvent(content="Note: 2 files were modified outside git."),
    "tool_start": ToolStartEvent(tool="list_directory", call_id="call_01"),
    "tool_start_with_input": ToolStartEvent(tool="read_file", input={"path": "a.txt"}, call_id="call_02"),
    "tool_end_success": ToolEndEvent(
        tool="list_directory", success=True, output="[DIR]  src/\n[FILE] README.md (1.2 KB)", call_id="call_01"
    ),
    "tool_end_refusal": ToolEndEvent(
        tool="write_file", success=False, output="Permission denied: Protected directory", call_id="call_03"
    ),
    "tool_end_minimal": ToolEndEvent(tool="x", success=True),
    "hitl_request_full": HitlRequestEvent(
        id="3f2a9c0d4b5e4f6a8b7c9d0e1f2a3b4c",
        action="Shell command: rm -rf build",
        target="rm -rf build",
        description="Allow executing this command?",
        tool_name="execute_command",
        arguments={"command": "rm -rf build"},
        call_id="call_02",
        level="critical",
        scope="execute_command: rm *",
    ),
    "hitl_request_minimal": HitlRequestEvent(id="abc", action="write_file", target="", description=""),
    "turn_end_sums": TurnEndEvent.from_counts(1834, 212),
    "turn_end_all_null": TurnEndEvent.from_counts(),
    "turn_end_usage_details": TurnEndEvent.from_counts(1834, 212, cached_input_tokens=1536, reasoning_tokens=64),
    "error": ErrorEvent(message='Unreadable request skipped: "type" missing'),
    "fallback": FallbackEvent(
        kind="fallback", provider_index=1, total_providers=3, category="rate_limit", message="switching provider"
    ),
    "fallback_retry": FallbackEvent(
        kind="retry",
        provider_index=0,
        total_providers=2,
        category="network",
        message="retrying",
        attempt=1,
        max_attempts=3,
    ),
    "agent_selected": AgentSelectedEvent(agent_name="coder", confidence=0.92),
    "plan_created": PlanCreatedEvent(plan_id="p1", step_count=2, step_descriptions=["read", "write"]),
    "plan_step_started": PlanStepStartedEvent(plan_id="p1", step_index=0, description="read"),
    "plan_step_completed": PlanStepCompletedEvent(plan_id="p1", step_index=0, success=True, summary="done"),
    "plan_completed": PlanCompletedEvent(plan_id="p1", success=True, summary="all steps done"),
    "context_compacted": ContextCompactedEvent(
        tokens_before=120_000, tokens_after=30_000, messages_summarized=40, messages_dropped=2, summary_used=True
    ),
    "context_compacted_unknown": ContextCompactedEvent(),
    "turn_restarted": TurnRestartedEvent(turn_id="0195f3a2c4d1-7c1e9a20"),
}


@pytest.mark.parametrize("name", list(REQUESTS))
def test_request_line(name: str, snapshot: SnapshotAssertion) -> None:
    assert serialize_request(REQUESTS[name]) == snapshot


@pytest.mark.parametrize("name", list(EVENTS))
def test_event_line(name: str, snapshot: SnapshotAssertion) -> None:
    assert serialize_event(EVENTS[name]) == snapshot


def test_every_registered_type_has_a_snapshot_case() -> None:
    assert {r.type for r in REQUESTS.values()} == set(DEFAULT_PROTOCOL.requests)
    assert {e.type for e in EVENTS.values()} == set(DEFAULT_PROTOCOL.events)


@pytest.mark.parametrize("name", list(REQUESTS))
def test_request_round_trip(name: str) -> None:
    request = REQUESTS[name]
    assert parse_request(serialize_request(request)) == request


@pytest.mark.parametrize("name", list(EVENTS))
def test_event_round_trip(name: str) -> None:
    event = EVENTS[name]
    assert parse_event(serialize_event(event)) == event


@pytest.mark.parametrize("line", [serialize_request(r) for r in REQUESTS.values()])
def test_lines_are_compact_single_lines_with_type_first(line: str) -> None:
    assert "\n" not in line
    assert line.startswith('{"type":"')
    assert json.dumps(json.loads(line), ensure_ascii=False, separators=(",", ":")) == line


def test_inventory_examples_are_reproduced_byte_for_byte() -> None:
    assert serialize_request(REQUESTS["user_message"]) == (
        '{"type":"user_message","content":"List the files in src","model":null}'
    )
    assert serialize_request(REQUESTS["user_message_with_options"]) == (
        '{"type":"user_message","content":"Summarize README.md","model":null,"options":{"tool_names":["read_file"],'
        '"tool_mode":"require:read_file","reasoning_effort":"low","temperature":0.2,"max_output_tokens":512}}'
    )
    assert serialize_event(EVENTS["turn_end_all_null"]) == (
        '{"type":"turn_end","input_tokens":null,"output_tokens":null,"total_tokens":null}'
    )
    assert serialize_event(EVENTS["hitl_request_full"]) == (
        '{"type":"hitl_request","id":"3f2a9c0d4b5e4f6a8b7c9d0e1f2a3b4c","action":"Shell command: rm -rf build",'
        '"target":"rm -rf build","description":"Allow executing this command?","tool_name":"execute_command",'
        '"arguments":{"command":"rm -rf build"},"call_id":"call_02","level":"critical",'
        '"scope":"execute_command: rm *"}'
    )


def test_type_anywhere_and_unknown_properties_are_ignored() -> None:
    line = '{"content":"hi","extra":{"deep":[1,2]},"options":{"temperature":1,"unknown":true},"type":"user_message"}'
    assert parse_request(line) == UserMessageRequest(content="hi", options=TurnOptions(temperature=1.0))
    assert parse_event('{"call_id":"c","success":false,"tool":"t","type":"tool_end"}') == ToolEndEvent(
        tool="t", success=False, call_id="c"
    )


def test_a_client_may_omit_null_fields_and_write_crlf() -> None:
    assert parse_request(b'{"type":"hitl_response","approved":true}\r\n') == HitlResponseRequest(approved=True)
    assert parse_request('{"type":"cancel"}\n') == CancelRequest()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"type":"hitl_response","approved":"yes"}', "hitl_response.approved: Input should be a valid boolean"),
        ('{"type":"hitl_response","approved":1}', "hitl_response.approved: Input should be a valid boolean"),
        ('{"type":"hitl_response"}', "hitl_response.approved: Field required"),
        ('{"type":"user_message","content":5}', "user_message.content: Input should be a valid string"),
        ('{"type":"user_message","Content":"a"}', "user_message.content: Field required"),
        ('{"type":"User_Message","content":"a"}', "unknown request type 'User_Message'"),
        ('{"type":"ping"}', "unknown request type 'ping'"),
        ('{"content":"a"}', 'request has no "type"'),
        ('{"type":5}', 'request "type" must be a string, got a number'),
        ("[1,2]", "expected a JSON object, got an array"),
        ('"user_message"', "expected a JSON object, got a string"),
        ("null", "expected a JSON object, got null"),
        (
            '{"type":"user_message","content":"a","options":{"max_output_tokens":1.5}}',
            "user_message.options.max_output_tokens: Input should be a valid integer",
        ),
        (
            '{"type":"user_message","content":"a","options":{"tool_names":"read_file"}}',
            "user_message.options.tool_names: Input should be a valid list",
        ),
        (
            '{"type":"context_update","selected_items":[1]}',
            "context_update.selected_items.0: Input should be a valid string",
        ),
    ],
)
def test_unreadable_requests_give_short_messages(line: str, message: str) -> None:
    with pytest.raises(UnreadableLineError) as caught:
        parse_request(line)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("line", "prefix"),
    [
        ("", "invalid JSON: "),
        ("{not json", "invalid JSON: "),
        ('{"type":"cancel"} trailing', "invalid JSON: "),
        ('{"type":"user_message","content":"\\ud800"}', "invalid JSON: "),
        ('{"type":"user_message","content":"\\udc00x"}', "invalid JSON: "),
        ('{"type":"user_message","content":"a","options":{"temperature":NaN}}', "invalid JSON: "),
        ("[" * 100_000, "invalid JSON: "),
        ('{"type":"user_message","content":"a\ud800"}', "line is not valid UTF-8 text"),
        (b'{"type":"user_message","content":"\xff"}', "line is not valid UTF-8 text"),
        (b'{"type":"user_message","content":"\xed\xa0\x80"}', "line is not valid UTF-8 text"),
    ],
)
def test_malformed_lines_are_unreadable(line: str | bytes, prefix: str) -> None:
    with pytest.raises(UnreadableLineError) as caught:
        parse_request(line)
    assert str(caught.value).startswith(prefix)
    assert len(str(caught.value)) <= 200


def test_escaped_surrogate_pairs_are_fine() -> None:
    assert parse_request('{"type":"user_message","content":"\\ud83d\\ude00"}') == UserMessageRequest(content="😀")


def test_deeply_nested_arguments_are_an_error_not_a_crash() -> None:
    def line(depth: int) -> str:
        nested = "[" * depth + "]" * depth
        return '{"type":"hitl_response","approved":true,"modified_arguments":{"a":' + nested + "}}"

    with pytest.raises(UnreadableLineError, match="invalid JSON"):
        parse_request(line(250))
    parsed = parse_request(line(150))
    assert parse_request(serialize_request(parsed)) == parsed


def test_long_lines_are_refused_by_the_limit() -> None:
    body = '{"type":"user_message","content":"' + "x" * (DEFAULT_MAX_LINE_BYTES - 40) + '"}'
    assert len(body.encode()) <= DEFAULT_MAX_LINE_BYTES
    assert isinstance(parse_request(body), UserMessageRequest)
    with pytest.raises(UnreadableLineError, match="line too long"):
        parse_request(body.replace('"x', '"' + "x" * 100))
    small = DEFAULT_PROTOCOL.with_max_line_bytes(64)
    multibyte = '{"type":"user_message","content":"' + "€" * 10 + '"}'  # 46 characters, 66 bytes
    with pytest.raises(UnreadableLineError, match=r"line too long \(66 bytes; the limit is 64\)"):
        small.parse_request(multibyte)
    with pytest.raises(UnreadableLineError, match="line too long"):
        small.parse_request(multibyte.encode())
    assert small.parse_request('{"type":"cancel"}') == CancelRequest()
    with pytest.raises(ValueError, match="positive"):
        ProtocolRegistry(max_line_bytes=0)


def test_strict_values_on_construction() -> None:
    with pytest.raises(ValidationError):
        HitlResponseRequest(approved="yes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        TurnEndEvent(input_tokens=-1)
    with pytest.raises(ValidationError):
        UserMessageRequest(content="a", options=TurnOptions(temperature=float("nan")))
    with pytest.raises(ValidationError):
        FallbackEvent(kind="later", provider_index=0, total_providers=1, category="x", message="y")  # type: ignore[arg-type]
    frozen = TextDeltaEvent(content="a")
    with pytest.raises(ValidationError):
        frozen.content = "b"


@pytest.mark.parametrize(
    ("counts", "total"), [((None, None), None), ((3, None), 3), ((None, 4), 4), ((3, 4), 7), ((0, 0), 0)]
)
def test_total_tokens_is_derived(counts: tuple[int | None, int | None], total: int | None) -> None:
    event = TurnEndEvent.from_counts(*counts)
    assert (event.input_tokens, event.output_tokens, event.total_tokens) == (*counts, total)


def test_null_handling_of_hitl_response() -> None:
    assert serialize_request(HitlResponseRequest(approved=True)) == (
        '{"type":"hitl_response","approved":true,"reason":null}'
    )
    line = serialize_request(HitlResponseRequest(approved=True, id="i", modified_arguments={}, always_approve=True))
    assert line == '{"type":"hitl_response","approved":true,"reason":null,"id":"i","modified_arguments":{},' + (
        '"always_approve":true}'
    )


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


@pytest.mark.parametrize("filler", ["a", "é", "€", "😀"])
@pytest.mark.parametrize("shift", [0, 1, 2, 3])
def test_tool_output_is_capped_at_8kb_on_a_character_boundary(filler: str, shift: int) -> None:
    original = "x" * shift + filler * (3 * TOOL_OUTPUT_LIMIT_BYTES // _utf8_len(filler))
    output = ToolEndEvent(tool="t", success=True, output=original).output
    assert output is not None
    assert _utf8_len(output) <= TOOL_OUTPUT_LIMIT_BYTES
    head, marker = output.split("\n[... output truncated: ")
    assert original.startswith(head)
    assert _utf8_len(head) > TOOL_OUTPUT_LIMIT_BYTES - 60
    assert marker == f"{_utf8_len(head)} of {_utf8_len(original)} bytes shown]"
    assert cap_tool_output(output) == output
    event = ToolEndEvent(tool="t", success=True, output=original)
    assert parse_event(serialize_event(event)) == event


def test_tool_output_at_the_limit_is_kept_whole() -> None:
    exact = "€" * (TOOL_OUTPUT_LIMIT_BYTES // 3) + "ab"
    assert _utf8_len(exact) == TOOL_OUTPUT_LIMIT_BYTES
    assert ToolEndEvent(tool="t", success=True, output=exact).output == exact
    assert "truncated" in (ToolEndEvent(tool="t", success=True, output=exact + "c").output or "")


def test_lone_surrogates_in_events_are_written_as_replacement_characters() -> None:
    line = serialize_event(TextDeltaEvent(content="bad \udcff byte"))
    assert line == '{"type":"text_delta","content":"bad \ufffd byte"}'
    line.encode("utf-8")
    capped = cap_tool_output("\udcff" * 5000)
    assert _utf8_len(serialize_event(ToolEndEvent(tool="t", success=True, output=capped))) < 8300


# --- registry extension --------------------------------------------------------------------------------------------


class PingRequest(ServerRequest):
    type: Literal["ping"] = "ping"
    nonce: int


class ProgressEvent(ServerEvent):
    type: Literal["progress"] = "progress"
    percent: float
    note: str | None = None


class TaggedMessageRequest(UserMessageRequest):
    tag: str = "none"


def test_registry_extension_reads_and_writes_custom_types() -> None:
    protocol = DEFAULT_PROTOCOL.with_request(PingRequest).with_event(ProgressEvent)
    assert protocol.parse_request('{"nonce":7,"type":"ping"}') == PingRequest(nonce=7)
    assert protocol.serialize_request(PingRequest(nonce=7)) == '{"type":"ping","nonce":7}'
    assert protocol.serialize_event(ProgressEvent(percent=50)) == '{"type":"progress","percent":50.0,"note":null}'
    assert protocol.parse_event('{"type":"progress","percent":5}') == ProgressEvent(percent=5.0)
    assert protocol.parse_request('{"type":"cancel"}') == CancelRequest()
    with pytest.raises(UnreadableLineError, match=r"ping\.nonce: Input should be a valid integer"):
        protocol.parse_request('{"type":"ping","nonce":"7"}')


def test_default_registry_is_untouched_by_extensions() -> None:
    DEFAULT_PROTOCOL.with_request(PingRequest).with_event(ProgressEvent)
    assert "ping" not in DEFAULT_PROTOCOL.requests
    with pytest.raises(UnreadableLineError, match="unknown request type 'ping'"):
        parse_request('{"type":"ping","nonce":1}')
    assert parse_event('{"type":"progress","percent":1}') == UnknownEvent(type="progress", percent=1)
    with pytest.raises(ValueError, match="not registered"):
        serialize_request(PingRequest(nonce=1))
    with pytest.raises(ValueError, match="not registered"):
        serialize_event(ProgressEvent(percent=1))
    assert type(parse_event('{"type":"cancel"}')) is UnknownEvent  # a request is no event this reader knows


def test_registry_can_replace_a_built_in_type() -> None:
    protocol = DEFAULT_PROTOCOL.with_request(TaggedMessageRequest)
    parsed = protocol.parse_request('{"type":"user_message","content":"a","tag":"t"}')
    assert parsed == TaggedMessageRequest(content="a", tag="t")
    assert protocol.serialize_request(parsed) == '{"type":"user_message","content":"a","model":null,"tag":"t"}'
    assert list(protocol.requests) == list(DEFAULT_PROTOCOL.requests)


class Untagged(ServerEvent):
    note: str = ""


class LooseTag(ServerEvent):
    type: str = "loose"


def test_registry_rejects_classes_without_a_literal_type() -> None:
    with pytest.raises(TypeError, match="Literal"):
        DEFAULT_PROTOCOL.with_event(Untagged)
    with pytest.raises(TypeError, match="Literal"):
        DEFAULT_PROTOCOL.with_event(LooseTag)
    with pytest.raises(TypeError, match="not a subclass of ServerRequest"):
        DEFAULT_PROTOCOL.with_request(TextDeltaEvent)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a subclass of ServerEvent"):
        DEFAULT_PROTOCOL.with_event(ServerEvent)


def test_an_unknown_event_type_parses_into_a_generic_event_that_writes_back_the_same_line() -> None:
    line = '{"type":"progress_report","percent":42,"steps":[{"name":"a"}],"note":null}'
    event = parse_event(line)
    assert isinstance(event, UnknownEvent) and event.type == "progress_report"
    assert event.model_extra == {"percent": 42, "steps": [{"name": "a"}], "note": None}
    assert serialize_event(event) == line


def test_an_unknown_fallback_kind_parses_into_a_generic_event() -> None:
    line = '{"type":"fallback","kind":"paused","provider_index":0,"total_providers":2,"category":"x","message":"m"}'
    event = parse_event(line)
    assert type(event) is UnknownEvent and event.type == "fallback" and serialize_event(event) == line


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"type":"text_delta"}', "text_delta.content: Field required"),
        ('{"type":"fallback","kind":"paused"}', "fallback.kind: Input should be"),
        ('{"content":"x"}', 'event has no "type"'),
        ('{"type":7}', 'event "type" must be a string'),
    ],
)
def test_a_malformed_known_event_or_a_line_without_a_type_is_still_unreadable(line: str, message: str) -> None:
    with pytest.raises(UnreadableLineError, match=message):
        parse_event(line)
