"""The session codec: every message part survives JSON, the format is versioned; times in .NET's round-trip form."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.sessions.codec import (
    SessionDataError,
    decode_message,
    decode_turn,
    encode_message,
    encode_turn,
    round_trip_time,
)
from ironhive.domain.errors import IronHiveError
from ironhive.ports.chat import (
    ChatMessage,
    JsonValue,
    OpaqueState,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from tests.adapters.sessions.conversation import tool_turn


def test_a_turn_with_every_part_kind_round_trips() -> None:
    messages = (ChatMessage.of_text(Role.SYSTEM, "You are helpful."), *tool_turn())
    assert decode_turn(encode_turn(messages)) == messages


def test_the_stored_form_is_versioned_snake_case_json() -> None:
    document = json.loads(encode_turn(tool_turn()))
    assert document["v"] == 1
    call = document["messages"][1]["parts"][2]
    assert call == {
        "kind": "tool_call",
        "call_id": "call_1",
        "name": "list_directory",
        "arguments": {"path": ".", "depth": 2, "hidden": False, "glob": None, "tags": ["a", 1.5]},
        "arguments_text": '{"path": ".", "depth": 2, "hidden": false, "glob": null, "tags": ["a", 1.5]}',
    }
    unparsed = document["messages"][1]["parts"][3]
    assert unparsed["arguments"] is None
    assert unparsed["parse_error"].startswith("JSONDecodeError")
    assert document["messages"][2]["parts"][1] == {
        "kind": "tool_result",
        "call_id": "call_2",
        "name": "read_file",
        "result": "Error: bad arguments",
        "success": False,
    }
    assert document["messages"][3]["parts"][0]["success"] is None
    assert "ünïcödé" in encode_turn(tool_turn())  # stored as text, not \u escapes


def test_a_record_written_before_parts_carried_provider_state_still_reads() -> None:
    old = (
        '{"v":1,"messages":[{"role":"assistant","parts":[{"kind":"thinking","text":"hmm"},'
        '{"kind":"tool_call","call_id":"c1","name":"ls","arguments":{},"arguments_text":"{}"}]}]}'
    )
    (message,) = decode_turn(old)
    assert message.parts == (
        ThinkingPart(text="hmm"),
        ToolCallPart(call_id="c1", name="ls", arguments={}, arguments_text="{}"),
    )


def test_provider_state_is_stored_beside_the_part_only_when_present() -> None:
    signed = ThinkingPart(text="hmm", opaque=OpaqueState(provider="anthropic", data="sig"))
    call = ToolCallPart(
        call_id="c1", name="ls", arguments={}, opaque=OpaqueState(provider="google", data="e30=", model="gemini-3")
    )
    document = json.loads(encode_turn((ChatMessage(role=Role.ASSISTANT, parts=(signed, call, TextPart(text="x"))),)))
    stored = document["messages"][0]["parts"]
    assert stored[0] == {"kind": "thinking", "text": "hmm", "opaque": {"provider": "anthropic", "data": "sig"}}
    assert stored[1]["opaque"] == {"provider": "google", "data": "e30=", "model": "gemini-3"}
    assert "opaque" not in stored[2]


def test_an_empty_message_and_an_empty_turn_round_trip() -> None:
    empty = (ChatMessage(role=Role.ASSISTANT, parts=()),)
    assert decode_turn(encode_turn(empty)) == empty
    assert decode_turn(encode_turn(())) == ()


@pytest.mark.parametrize(
    "text",
    [
        '{"v":2,"messages":[]}',
        '{"messages":[]}',
        '{"v":1}',
        "[1,2]",
        "not json",
        '{"v":1,"messages":[{"role":"robot","parts":[]}]}',
        '{"v":1,"messages":[{"role":"user","parts":[{"kind":"image","url":"x"}]}]}',
        '{"v":1,"messages":[{"role":"user","parts":[{"kind":"text"}]}]}',
        '{"v":1,"messages":[{"role":"tool","parts":[{"kind":"tool_result","call_id":"c","name":"n","result":"r",'
        '"success":"yes"}]}]}',
        '{"v":1,"messages":[{"role":"assistant","parts":[{"kind":"thinking","text":"t","opaque":"sig"}]}]}',
        '{"v":1,"messages":[{"role":"assistant","parts":[{"kind":"thinking","text":"t","opaque":{"provider":"a"}}]}]}',
        '{"v":1,"messages":[{"role":"assistant","parts":[{"kind":"thinking","text":"t","opaque":{"provider":"a",'
        '"data":"d","model":3}}]}]}',
    ],
    ids=["future-version", "no-version", "no-messages", "not-object", "not-json", "bad-role", "bad-kind",
         "missing-text", "bad-success", "opaque-not-object", "opaque-no-data", "opaque-bad-model"],
)  # fmt: skip
def test_unreadable_data_is_refused_with_a_project_error(text: str) -> None:
    with pytest.raises(SessionDataError) as caught:
        decode_turn(text)
    assert isinstance(caught.value, IronHiveError)


json_values: st.SearchStrategy[JsonValue] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=8,
)
opaque_states = st.builds(OpaqueState, provider=st.text(), data=st.text(), model=st.none() | st.text())
parts = st.one_of(
    st.builds(TextPart, text=st.text()),
    st.builds(ThinkingPart, text=st.text(), opaque=st.none() | opaque_states),
    st.builds(
        ToolCallPart,
        call_id=st.text(),
        name=st.text(),
        arguments=st.none() | st.dictionaries(st.text(), json_values, max_size=4),
        arguments_text=st.text(),
        parse_error=st.none() | st.text(),
        opaque=st.none() | opaque_states,
    ),
    st.builds(ToolResultPart, call_id=st.text(), name=st.text(), result=st.text(), success=st.none() | st.booleans()),
)
messages = st.builds(ChatMessage, role=st.sampled_from(Role), parts=st.lists(parts, max_size=4).map(tuple))


@given(message=messages)
def test_any_message_round_trips(message: ChatMessage) -> None:
    assert decode_message(json.loads(json.dumps(encode_message(message)))) == message


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 8, 31, tzinfo=UTC), "2026-08-31T00:00:00.0000000Z"),
        (datetime(2026, 8, 31, 12, 5, 9, 123456, tzinfo=UTC), "2026-08-31T12:05:09.1234560Z"),
        (datetime(2026, 8, 31, 9, 0, tzinfo=timezone(timedelta(hours=9))), "2026-08-31T00:00:00.0000000Z"),
        (datetime(2026, 8, 31, 0, 0, 0, 1), "2026-08-31T00:00:00.0000010Z"),  # naive: taken as UTC
    ],
    ids=["midnight", "fraction", "offset", "naive"],
)
def test_round_trip_time_has_seven_fraction_digits_and_z(moment: datetime, expected: str) -> None:
    assert round_trip_time(moment) == expected
