"""SSE framing of ``ironhive serve``: each protocol line becomes exactly one event, whatever its text holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ironhive.protocol.models import DEFAULT_PROTOCOL, ErrorEvent, TextDeltaEvent, ToolStartEvent
from ironhive.serve.app import event_type, sse_frame

TEXT = st.text(max_size=200)


@given(
    event=st.one_of(
        st.builds(TextDeltaEvent, content=TEXT),
        st.builds(ErrorEvent, message=TEXT),
        st.builds(ToolStartEvent, tool=TEXT, input=st.dictionaries(TEXT, TEXT, max_size=3), call_id=TEXT),
    ),
    event_id=st.integers(min_value=0, max_value=2**63).map(str),
)
def test_a_protocol_line_is_one_sse_event_carrying_it_exactly(event: object, event_id: str) -> None:
    line = DEFAULT_PROTOCOL.serialize_event(event)  # type: ignore[arg-type]
    frame = sse_frame(event_id, line).decode("utf-8")
    assert frame.endswith("\n\n") and "\r" not in frame
    fields = frame[:-2].split("\n")
    assert fields == [f"id: {event_id}", f"event: {event_type(line)}", f"data: {line}"]
    assert event_type(line) == event.type  # type: ignore[attr-defined]


@given(kind=st.text(min_size=1, max_size=30))
def test_the_event_name_is_the_lines_type_even_when_escaped(kind: str) -> None:
    import json

    line = json.dumps({"type": kind, "x": 1}, separators=(",", ":"), ensure_ascii=False)
    assert event_type(line) == kind
    fields = sse_frame("7", line).decode("utf-8")[:-2].split("\n")
    assert len(fields) == 3 and fields[2] == f"data: {line}"
    assert fields[1] == (f"event: {kind}" if "\r" not in kind and "\n" not in kind else "event: message")
