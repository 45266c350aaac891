"""Unreadable and blank request lines never hurt the real ``ironhive run --server`` process (hypothesis)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.support.server_process import ServerProcess

UNREADABLE = "Unreadable request skipped: "
INVALID = "Invalid user_message: "
BARE_TURN_END = {"type": "turn_end", "input_tokens": None, "output_tokens": None, "total_tokens": None}
MAX_LINE_BYTES = 4 * 1024 * 1024
KNOWN_TYPES = ("user_message", "context_update", "hitl_response", "cancel", "shutdown")


@dataclass(frozen=True)
class Line:
    """One request line (without its newline) and how the server must answer it.

    ``unreadable``: with one unreadable-line ``error``; ``rejected``: a ``user_message`` with a wrong field, answered
    in its place in the order with an ``Invalid user_message`` error and its ``turn_end``.
    """

    data: bytes
    unreadable: bool
    rejected: bool = False


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One long-lived server on the echo model, shared by every example."""
    work = tmp_path_factory.mktemp("fuzz-work")
    home = tmp_path_factory.mktemp("fuzz-home")
    with ServerProcess("--provider", "scripted", cwd=work, home=home) as process:
        assert process.next_event()["type"] == "session_started"
        yield process
        process.close_stdin()
        assert process.remaining_events() == []
        assert process.wait() == 0


# --- strategies: each line's expected outcome is known by construction --------------------------------------------

numbers = st.integers() | st.floats(allow_nan=False, allow_infinity=False)
json_scalars = st.none() | st.booleans() | numbers | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
arrays = st.lists(json_values, max_size=3)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=3)
not_a_string = st.none() | st.booleans() | numbers | arrays | objects
not_a_bool = st.none() | numbers | st.text() | arrays | objects
not_string_or_null = st.booleans() | numbers | arrays | objects
not_an_object_or_null = st.booleans() | numbers | st.text() | arrays


def dumped(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8")


def unreadable(data: bytes) -> Line:
    assert b"\n" not in data
    return Line(data, True)


def wrong_fields(value: dict[str, Any]) -> Line:
    """A request with a wrong field: a user_message still ends its turn, any other request is unreadable."""
    if value.get("type") == "user_message":
        return Line(dumped(value), unreadable=False, rejected=True)
    return unreadable(dumped(value))


blank_lines = st.text(alphabet=" \t\r", max_size=6).map(lambda text: Line(text.encode(), False))

not_json = st.text(max_size=40).map(lambda text: unreadable(("{" + text.replace("}", "")).replace("\n", "").encode()))
unclosed_arrays = st.text(max_size=20).map(
    lambda text: unreadable(("[" + text.replace("]", "")).replace("\n", "").encode())
)
not_objects = (json_scalars | arrays).map(lambda value: unreadable(dumped(value)))
without_type = st.dictionaries(st.text(max_size=8).filter(lambda key: key != "type"), json_values, max_size=4).map(
    lambda value: unreadable(dumped(value))
)
unknown_types = (
    st.text(max_size=20).filter(lambda tag: tag not in KNOWN_TYPES).map(lambda tag: unreadable(dumped({"type": tag})))
)
non_string_types = not_a_string.map(lambda tag: unreadable(dumped({"type": tag, "content": "hi"})))
wrong_field_types = st.one_of(
    not_a_string.map(lambda v: {"type": "user_message", "content": v}),
    not_an_object_or_null.map(lambda v: {"type": "user_message", "content": "hi", "options": v}),
    not_a_bool.map(lambda v: {"type": "hitl_response", "approved": v}),
    not_string_or_null.map(lambda v: {"type": "context_update", "working_path": v}),
    st.sampled_from(
        [
            {"type": "user_message", "content": "hi", "options": {"tool_names": "read_file"}},
            {"type": "user_message", "content": "hi", "options": {"temperature": "hot"}},
            {"type": "user_message", "content": "hi", "options": {"max_output_tokens": 1.5}},
            {"type": "user_message", "content": "hi", "model": 4},
            {"type": "hitl_response", "approved": True, "modified_arguments": ["path"]},
            {"type": "hitl_response", "approved": "yes"},
            {"type": "hitl_response"},
            {"type": "user_message"},
            {"type": "context_update", "selected_items": "src/app.py"},
        ]
    ),
).map(wrong_fields)
binary = st.tuples(st.binary(max_size=30), st.binary(max_size=30)).map(
    lambda parts: unreadable((parts[0] + b"\xff" + parts[1]).replace(b"\n", b""))  # 0xff is never UTF-8
)
encoded_surrogates = st.sampled_from([b"\xed\xa0\x80", b"\xed\xbf\xbf"]).map(
    lambda surrogate: unreadable(b'{"type":"user_message","content":"' + surrogate + b'"}')
)
lone_surrogate_escapes = st.tuples(st.sampled_from(["\\ud800", "\\udbff", "\\udc00", "\\udfff"]), st.text(max_size=5))
surrogate_escapes = lone_surrogate_escapes.map(
    lambda pair: unreadable(
        ('{"type":"user_message","content":"' + pair[0] + json.dumps(pair[1])[1:-1] + '"}').encode()
    )
)
embedded_nuls = st.sampled_from(
    [
        b'{"type":"user_message","content":"a\x00b"}',  # a raw control character inside a string
        b'{"type":"cancel"}\x00',  # trailing bytes after the object
        b"\x00",
        b'\x00{"type":"cancel"}',
        b'{"type":"user_\x00message","content":"hi"}',
    ]
).map(unreadable)


@st.composite
def arbitrary_lines(draw: st.DrawFn) -> Line:
    """Any bytes without a newline: blank if only whitespace, else unreadable unless it happens to be a request."""
    data = draw(st.binary(max_size=40) | st.text(max_size=40).map(lambda text: text.encode("utf-8", "surrogatepass")))
    data = data.replace(b"\n", b"")
    if not data.strip():
        return Line(data, False)
    try:
        value = json.loads(data)
    except ValueError:
        value = None
    assume(not (isinstance(value, dict) and value.get("type") in KNOWN_TYPES))
    return unreadable(data)


request_lines = st.one_of(
    blank_lines,
    not_json,
    unclosed_arrays,
    not_objects,
    without_type,
    unknown_types,
    non_string_types,
    wrong_field_types,
    binary,
    encoded_surrogates,
    surrogate_escapes,
    embedded_nuls,
    arbitrary_lines(),
)

_markers = itertools.count(1)


def echoed(events: list[dict[str, Any]]) -> str:
    """The echo model's answer; it repeats the latest user message, which late in a long session may be the goal
    reminder the context manager adds (quoting the message), so tests look for their text inside it."""
    text = "".join(event["content"] for event in events if event["type"] == "text_delta")
    assert text.startswith("You said: "), text
    return text


def expect_errors_then_answer(server: ServerProcess, errors: int, rejected: int = 0) -> None:
    """After ``errors`` unreadable lines and ``rejected`` malformed user messages (each its own error + turn_end), a
    user message still gets its answer (and nothing else arrives)."""
    marker = f"<still alive {next(_markers)}>"
    server.user_message(marker)
    turns = [server.read_turn() for _ in range(rejected + 1)]
    events = [event for turn in turns for event in turn]
    reported = [event for event in events if event["type"] == "error"]
    assert len(reported) == errors + rejected, events
    assert len([event for event in reported if event["message"].startswith(UNREADABLE)]) == errors, reported
    assert len([event for event in reported if event["message"].startswith(INVALID)]) == rejected, reported
    assert all(len(event["message"]) < 300 for event in reported)  # never echoes the line back
    for turn in turns[:-1]:
        kept = [event for event in turn if not (event["type"] == "error" and event["message"].startswith(UNREADABLE))]
        assert [event["type"] for event in kept] == ["error", "turn_end"] and kept[1] == BARE_TURN_END, turn
        assert kept[0]["message"].startswith(INVALID), turn
    answer = [event for event in turns[-1] if event["type"] != "error"]
    assert marker in echoed(answer)
    assert [e["type"] for e in answer if e["type"] != "text_delta"] == ["turn_end"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(lines=st.lists(request_lines, min_size=1, max_size=6))
def test_unreadable_lines_get_one_error_each_and_blank_lines_nothing(server: ServerProcess, lines: list[Line]) -> None:
    server.send_raw(b"".join(line.data + b"\n" for line in lines))
    expect_errors_then_answer(server, sum(line.unreadable for line in lines), sum(line.rejected for line in lines))


def test_lines_over_the_limit_are_skipped_without_reading_them_whole(server: ServerProcess) -> None:
    request = b'{"type":"user_message","content":"x"}'
    server.send_raw(b"{" * (MAX_LINE_BYTES + 1) + b"\n")
    server.send_raw(request + b" " * (MAX_LINE_BYTES - len(request) + 1) + b"\n")  # one byte too many
    server.send_raw(b"x" * (3 * MAX_LINE_BYTES) + b"\n")
    expect_errors_then_answer(server, 3)


def test_a_line_of_exactly_the_limit_is_read(server: ServerProcess) -> None:
    request = b'{"type":"user_message","content":"at the limit"}'
    for ending in (b"\n", b"\r\n"):  # the newline (and a \r before it) does not count
        server.send_raw(request + b" " * (MAX_LINE_BYTES - len(request)) + ending)
        turn = server.read_turn()
        assert "at the limit" in echoed(turn)


def test_an_escaped_nul_and_other_control_characters_in_content_are_fine(server: ServerProcess) -> None:
    server.send_raw(b'{"type":"user_message","content":"a\\u0000b\\u001bc"}\n')
    turn = server.read_turn()
    assert "a\x00b\x1bc" in echoed(turn)
    assert [e["type"] for e in turn][-1] == "turn_end"


def test_a_line_written_in_pieces_is_one_request(server: ServerProcess) -> None:
    line = b'{"type":"user_message","content":"in pieces"}\r\n'
    for piece in (line[:7], line[7:30], line[30:-1]):
        server.send_raw(piece)
        assert server.events_within(0.1) == []  # nothing happens before the newline
    server.send_raw(line[-1:])
    turn = server.read_turn()
    assert "in pieces" in echoed(turn)
