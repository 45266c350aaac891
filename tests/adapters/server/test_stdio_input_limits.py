"""Bounded input of the stdio runner: messages beyond the queue limits are refused in order; reading pauses."""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
from collections.abc import AsyncIterator

import pytest

from ironhive.adapters.server.stdio_runner import AgentServerRunner, _Line, _LineReader
from ironhive.adapters.server.turns import TurnSession
from ironhive.protocol.models import (
    CancelRequest,
    HitlResponseRequest,
    ServerEvent,
    TextDeltaEvent,
    TurnEndEvent,
    UserMessageRequest,
    parse_event,
)

REFUSAL = (
    "The turn queue is full (at most 2 messages and 1000 bytes may wait): the message was not taken; "
    "send it again when a turn has ended"
)


async def slow_echo(request: UserMessageRequest) -> AsyncIterator[ServerEvent]:
    await asyncio.sleep(0.02)
    yield TextDeltaEvent(content=request.content[:10])
    yield TurnEndEvent.from_counts()


def lines(*requests: dict[str, object]) -> bytes:
    return b"".join(json.dumps(request).encode() + b"\n" for request in requests)


async def serve(data: bytes, **limits: int) -> list[dict[str, object]]:
    out = io.BytesIO()
    runner = AgentServerRunner(slow_echo, stdin=io.BytesIO(data), stdout=out, **limits)  # type: ignore[arg-type]
    await runner.run()
    return [parse_event(line).model_dump(mode="json") for line in out.getvalue().splitlines()]


def message(content: str) -> dict[str, object]:
    return {"type": "user_message", "content": content}


async def test_messages_beyond_the_count_limit_get_an_error_and_a_turn_end_in_their_place() -> None:
    data = lines(*(message(f"m{n}") for n in range(1, 7)))
    events = await serve(data, max_queued_messages=2, max_queued_bytes=1000)
    texts = [event.get("content") or event.get("message") or event["type"] for event in events]
    assert texts == ["m1", "turn_end", "m2", "turn_end", *[REFUSAL, "turn_end"] * 4]


async def test_messages_beyond_the_byte_limit_are_refused_and_later_ones_that_fit_wait() -> None:
    data = lines(message("a" * 600), message("b" * 600), message("c" * 300))
    events = await serve(data, max_queued_messages=2, max_queued_bytes=1000)
    texts = [event.get("content") or event.get("message") or event["type"] for event in events]
    assert texts == ["a" * 10, "turn_end", REFUSAL, "turn_end", "c" * 10, "turn_end"]


async def test_a_cancel_and_an_answer_are_taken_while_the_queue_is_full() -> None:
    started = asyncio.Event()

    async def forever(request: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        started.set()
        await asyncio.sleep(3600)
        yield TurnEndEvent.from_counts()  # pragma: no cover

    sent: list[ServerEvent] = []

    async def send(event: ServerEvent) -> None:
        sent.append(event)

    session = TurnSession(forever, send, max_queued_messages=1)
    async with session:
        await session.handle(UserMessageRequest(content="m0"))
        await asyncio.wait_for(started.wait(), 5)
        for n in range(1, 4):
            await session.handle(UserMessageRequest(content=f"m{n}"))  # m1 waits, m2 and m3 are refused
        queued = session.queued
        await session.handle(HitlResponseRequest(approved=True))
        answered = [getattr(event, "message", "") for event in sent]
        await session.handle(CancelRequest())  # ends m0; m1 starts
        await asyncio.sleep(0.05)
        await session.handle(CancelRequest())  # ends m1; the refusals follow in order
        session.close()
    assert queued == (1, 2)
    assert answered == ["Approval answer dropped: this agent asks no approvals"]
    assert [event.type for event in sent] == ["error", "turn_end", "turn_end", *["error", "turn_end"] * 2]


def test_queue_limits_must_be_positive() -> None:
    async def nothing(request: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        yield TurnEndEvent.from_counts()  # pragma: no cover

    async def send(event: ServerEvent) -> None:  # pragma: no cover
        pass

    with pytest.raises(ValueError, match="must be positive"):
        TurnSession(nothing, send, max_queued_messages=0)


async def test_reading_pauses_while_the_lines_read_have_not_been_taken() -> None:
    read_fd, write_fd = os.pipe()
    line = b"y" * 1023 + b"\n"
    total = 2 * 1024 * 1024  # far more than a pipe holds: the writer can only finish if the reader keeps reading
    finished = threading.Event()

    def write() -> None:
        with os.fdopen(write_fd, "wb") as stream:
            for _ in range(total // len(line)):
                stream.write(line)
        finished.set()

    with os.fdopen(read_fd, "rb", buffering=0) as stdin:
        reader = _LineReader(stdin, max_line_bytes=4096, max_buffered_bytes=16 * 1024)  # type: ignore[arg-type]
        reader.start()
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        await asyncio.sleep(0.5)
        assert not finished.is_set()  # nobody takes the lines, so the reader stopped reading and the pipe is full
        taken = 0
        while (item := await reader.next()) is not None:
            assert isinstance(item, _Line) and item.data == line[:-1]
            taken += 1
        reader.stop()
        writer.join(timeout=5)
    assert finished.is_set() and taken == total // len(line)
