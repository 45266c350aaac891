"""The HTTP runner's inbox decoding: a text/event-stream, cut anywhere, decodes to the events it was written from."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ironhive.adapters.server.http_runner import decode_event_stream

URL = "http://127.0.0.1:5100/api/agent/a/inbox"

Decoded = tuple[str, str, int | None]
"""An event as the runner reads it: (data, last event id, retry)."""


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def decode(parts: list[bytes], max_event_bytes: int | None = None) -> list[Decoded]:
    async def run() -> list[Decoded]:
        stream = decode_event_stream(_chunks(parts), url=URL, max_event_bytes=max_event_bytes)
        return [(event.data, event.id, event.retry) async for event in stream]

    return asyncio.run(run())


# --- the rules, on one stream that uses them all ----------------------------------------------------------------------

STREAM = (
    "\ufeff: hello\r\n"  # a BOM, then a comment
    "retry: 1500\r\n"
    "id: 1\r\n"
    'data: {"a":1}\r\n'
    "\r\n"
    "event: other\n"  # event names are read but not used
    "data:first\n"  # no space after the colon
    "data:  second\n"  # only the first space is dropped
    "data\n"  # a field without a colon: an empty data line
    "unknown: field\n"
    "\n"
    "id: 2\rdata: é→\r\r"  # CR line ends
    "id\n"  # an empty id resets the last id
    "\n"
    "id: bad\0id\n"  # an id holding NUL is ignored
    "retry: 12x\n"  # a retry that is not a number is ignored
    "data: cut off"  # never finished: never dispatched
).encode()

EXPECTED: list[Decoded] = [
    ('{"a":1}', "1", 1500),
    ("first\n second\n", "1", None),
    ("é→", "2", None),
    ("", "", None),
]


def test_the_event_stream_rules() -> None:
    assert decode([STREAM]) == EXPECTED


def test_the_stream_may_be_cut_anywhere_even_inside_a_character_or_a_crlf() -> None:
    assert decode([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED
    for cut in range(1, len(STREAM)):
        assert decode([STREAM[:cut], STREAM[cut:]]) == EXPECTED, cut


def test_bytes_that_are_not_utf8_are_replaced_not_fatal() -> None:
    assert decode([b"data: a\xff\xfeb\n\n", b"data: next\n\n"]) == [("a\ufffd\ufffdb", "", None), ("next", "", None)]


def test_comments_alone_dispatch_nothing() -> None:
    assert decode([b": keep-alive\n\n: another\r\n\r\n"]) == []


def test_an_event_over_the_limit_is_an_error_not_a_memory_sink() -> None:
    with pytest.raises(httpx2.SSEError, match="100 byte limit"):
        decode([b"data: " + b"x" * 60, b"y" * 60 + b"\n\n"], max_event_bytes=100)
    with pytest.raises(httpx2.SSEError):  # a line that never ends is bounded too
        decode([b"data: " + b"x" * 50 for _ in range(10)], max_event_bytes=100)
    assert decode([b"data: " + b"x" * 80 + b"\n\n"], max_event_bytes=100) == [("x" * 80, "", None)]


# --- generated streams ------------------------------------------------------------------------------------------------

line_text = st.text(st.characters(blacklist_characters="\r\n\0", blacklist_categories=("Cs",)), max_size=12)


@dataclass
class Block:
    """One event block as written: its lines, and the event the decoder must dispatch for it (or none)."""

    lines: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    id: str | None = None
    retry: int | None = None
    dispatches: bool = False


@st.composite
def blocks(draw: st.DrawFn) -> Block:
    block = Block()
    for _ in range(draw(st.integers(min_value=0, max_value=5))):
        kind = draw(st.sampled_from(["data", "data", "id", "retry", "event", "comment", "bad retry"]))
        if kind == "data":
            value = draw(line_text)
            block.data.append(value)
            spaced = value.startswith(" ") or draw(st.booleans())  # "data:x" and "data: x" mean the same
            block.lines.append(f"data: {value}" if spaced else f"data:{value}")
        elif kind == "id":
            block.id = draw(line_text)
            block.lines.append(f"id: {block.id}")
        elif kind == "retry":
            block.retry = draw(st.integers(min_value=0, max_value=10**6))
            block.lines.append(f"retry: {block.retry}")
        elif kind == "event":
            block.lines.append(f"event: {draw(line_text)}")
        elif kind == "comment":
            block.lines.append(f":{draw(line_text)}")
            continue
        else:
            block.lines.append(f"retry: {draw(line_text.filter(lambda text: not text.strip().isdigit()))}x")
            continue
        block.dispatches = True
    return block


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[Decoded]]:
    """A stream written with mixed line ends, and the events it holds by the event-stream rules."""
    written = draw(st.lists(blocks(), max_size=6))
    lines = [line for block in written for line in [*block.lines, ""]]
    text, previous = "", ""
    for line in lines:
        endings = ["\n", "\r\n", "\r"]
        if previous == "\r" and not line:
            endings.remove("\n")  # "\r" then "\n" would read as one CRLF, not as a blank line
        previous = draw(st.sampled_from(endings))
        text += line + previous
    prefix = "\ufeff" if draw(st.booleans()) else ""
    expected: list[Decoded] = []
    last_id = ""
    for block in written:
        last_id = block.id if block.id is not None else last_id
        if block.dispatches:
            expected.append(("\n".join(block.data), last_id, block.retry))
    return (prefix + text).encode(), expected


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.data())
def test_generated_streams_cut_at_random_decode_to_their_events(
    stream: tuple[bytes, list[Decoded]], data: st.DataObject
) -> None:
    body, expected = stream
    cuts = sorted(data.draw(st.sets(st.integers(min_value=1, max_value=max(len(body) - 1, 1)), max_size=20)))
    parts = [body[start:end] for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decode([part for part in parts if part]) == expected
