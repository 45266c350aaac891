"""AgentServerRunner: the turn-stream protocol over stdin/stdout, one JSON object per line."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import BinaryIO, NamedTuple, TypeAlias

from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.adapters.server.turns import ProcessMessage, TurnSession, refuse_unreadable
from ironhive.protocol.models import (
    DEFAULT_PROTOCOL,
    ContextUpdateRequest,
    ProtocolRegistry,
    ServerEvent,
    UnreadableLineError,
)

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024
_ITEM_OVERHEAD = 64  # what an item costs beyond its bytes, so that a flood of empty lines is bounded too

DEFAULT_MAX_QUEUED_MESSAGES = 16
"""Most ``user_message`` requests waiting behind the running turn; more are refused with an ``error``."""
DEFAULT_MAX_QUEUED_BYTES = 16 * 1024 * 1024
"""Most content bytes of the waiting ``user_message`` requests together; more are refused with an ``error``."""


class _Line(NamedTuple):
    data: bytes
    received_at: float  # time.monotonic() when the chunk completing the line was read


_Item: TypeAlias = _Line | UnreadableLineError | None
"""A line (without its newline), a line that could not be taken, or None for the end of input."""


class _LineReader:
    """Reads lines on a thread (stdin may be a pipe, a file or a terminal) and hands them to the event loop.

    A line may hold ``max_line_bytes`` bytes, its newline (and a ``\\r`` before it) not counted. Reading pauses while
    the lines handed over but not yet taken hold more than ``max_buffered_bytes`` (at least one whole line is always
    taken), so a client that writes faster than the runner takes fills its own pipe, not the runner's memory. The
    stream's file
    descriptor is read directly when it has one: a thread blocked in a buffered object's ``readline`` holds that
    object's lock, and when the object is ``sys.stdin`` the interpreter aborts at exit ("could not acquire lock for
    <stdin> at interpreter shutdown") whenever the runner returns on ``shutdown`` while the client keeps stdin open.
    """

    def __init__(self, stream: BinaryIO, max_line_bytes: int, max_buffered_bytes: int | None = None) -> None:
        self._stream = stream
        self._max = max_line_bytes
        self._budget = max_line_bytes if max_buffered_bytes is None else max_buffered_bytes
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._space = threading.Condition()
        self._buffered = 0  # bytes (plus overhead) handed to the loop and not yet taken
        self._stopped = False

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._pump, args=(loop,), name="ironhive-stdin", daemon=True).start()

    def stop(self) -> None:
        """Release a reading thread that waits for room: nobody takes lines any more."""
        with self._space:
            self._stopped = True
            self._space.notify_all()

    async def next(self) -> _Item:
        item = await self._queue.get()
        with self._space:
            self._buffered -= _cost(item)
            if self._buffered <= self._budget:
                self._space.notify_all()
        return item

    def _chunks(self) -> Callable[[], bytes]:
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: an in-memory stream
            read1 = getattr(self._stream, "read1", None)
            return functools.partial(read1 or self._stream.read, _CHUNK)
        return functools.partial(os.read, fd, _CHUNK)

    def _put_all(self, items: list[_Item]) -> None:
        for item in items:
            self._queue.put_nowait(item)

    def _line(self, line: bytes, received_at: float) -> _Line | UnreadableLineError:
        line = line.removesuffix(b"\r")
        if len(line) > self._max:
            return UnreadableLineError(f"the line is longer than {self._max} bytes")
        return _Line(line, received_at)

    def _hand_over(self, loop: asyncio.AbstractEventLoop, batch: list[_Item]) -> None:
        """Give a batch to the loop, then wait while the loop has more than its budget left to take."""
        with self._space:
            self._buffered += sum(_cost(item) for item in batch)
        loop.call_soon_threadsafe(self._put_all, batch)
        with self._space:
            while self._buffered > self._budget and not self._stopped:
                self._space.wait()

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        pending = bytearray()  # the start of a line whose newline has not arrived yet
        skipping = False  # inside a line already reported as too long
        try:
            read = self._chunks()
            while chunk := read():
                received_at = time.monotonic()
                batch: list[_Item] = []
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    if skipping:
                        skipping = False
                    elif pending:
                        pending += chunk[start:end]
                        batch.append(self._line(bytes(pending), received_at))
                    else:
                        batch.append(self._line(chunk[start:end], received_at))
                    pending.clear()
                    start = end + 1
                if not skipping and start < len(chunk):
                    if len(pending) + len(chunk) - start > self._max + 1:  # +1: room for a \r before the newline
                        batch.append(UnreadableLineError(f"the line is longer than {self._max} bytes"))
                        pending.clear()
                        skipping = True
                    else:
                        pending += chunk[start:]
                if batch:
                    self._hand_over(loop, batch)
                if self._stopped:
                    return
        except (OSError, ValueError) as error:  # stdin closed under us: treat as end of input
            log.debug("stdin reader stopped: %s", error)
        except RuntimeError:  # the event loop is closed: the runner has returned and nobody reads any more
            return
        last: list[_Item] = [self._line(bytes(pending), time.monotonic())] if pending and not skipping else []
        with contextlib.suppress(RuntimeError):  # the event loop is closed
            loop.call_soon_threadsafe(self._put_all, [*last, None])


def _cost(item: _Item) -> int:
    return _ITEM_OVERHEAD + (len(item.data) if isinstance(item, _Line) else 0)


class AgentServerRunner:
    """Serves the turn-stream protocol on stdin/stdout.

    Reads requests while turns run, answers every unreadable line with an ``error`` event and goes on, and on
    ``shutdown`` or end of input finishes the turns already received, then returns. Memory stays bounded whatever the
    client sends: messages beyond the queue limits are refused in order, and reading pauses while the lines already
    read have not been taken (the client's writes then block on a full pipe). Only protocol lines are written to
    stdout; diagnostics go to the logger (stderr).

    Args:
        process_message: The processor of user messages (the same signature as the HTTP runner's).
        hitl_bridge: Approvals over the wire; attached while the runner runs.
        protocol: The request and event types (extend it with ``with_request``/``with_event``).
        stdin: Where requests come from (default: the process's stdin).
        stdout: Where events go (default: the process's stdout).
        on_context_update: Called for every ``context_update``.
        skip_context_enrichment: Do not prefix messages with the client's working path.
        max_queued_messages: Most messages waiting behind the running turn; more are refused (``error`` + ``turn_end``).
        max_queued_bytes: Most content bytes of the waiting messages together; more are refused the same way.
    """

    def __init__(
        self,
        process_message: ProcessMessage,
        *,
        hitl_bridge: HitlBridge | None = None,
        protocol: ProtocolRegistry = DEFAULT_PROTOCOL,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        on_context_update: Callable[[ContextUpdateRequest], None] | None = None,
        skip_context_enrichment: bool = False,
        max_queued_messages: int = DEFAULT_MAX_QUEUED_MESSAGES,
        max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES,
    ) -> None:
        self._process = process_message
        self._max_queued_messages = max_queued_messages
        self._max_queued_bytes = max_queued_bytes
        self._bridge = hitl_bridge
        self._protocol = protocol
        self._stdin = stdin or sys.stdin.buffer
        self._stdout = stdout or sys.stdout.buffer
        self._on_context_update = on_context_update
        self._skip_enrichment = skip_context_enrichment
        self._output_closed = False

    async def write(self, event: ServerEvent) -> None:
        """Write one event as a line and flush it.

        Lines from different tasks (a ``hitl_request`` comes from inside a tool call) never interleave, and need no
        lock for it: the write and the flush are synchronous, so no other task runs between them. (An uncontended
        ``asyncio.Lock`` here cost about 1.4 µs per event, some 7 % of a streamed text delta's cost.)
        """
        if self._output_closed:
            return
        line = (self._protocol.serialize_event(event) + "\n").encode("utf-8")
        try:
            self._stdout.write(line)
            self._stdout.flush()
        except (OSError, ValueError):  # the client closed our stdout: nobody can read or answer any more
            self._output_closed = True
            log.warning("stdout closed by the client; events are dropped from now on")
            if self._bridge is not None:
                self._bridge.detach()

    async def run(self) -> None:
        """Serve until ``shutdown`` or end of input, then finish the received turns."""
        reader = _LineReader(self._stdin, self._protocol.max_line_bytes)
        reader.start()
        session = TurnSession(
            self._process,
            self.write,
            hitl_bridge=self._bridge,
            on_context_update=self._on_context_update,
            skip_context_enrichment=self._skip_enrichment,
            max_queued_messages=self._max_queued_messages,
            max_queued_bytes=self._max_queued_bytes,
        )
        try:
            async with session:
                await self._serve(reader, session)
        finally:
            reader.stop()

    async def _serve(self, reader: _LineReader, session: TurnSession) -> None:
        while True:
            item = await reader.next()
            if item is None:
                session.connection_lost()  # end of input: nobody is left to answer approvals
                return
            if isinstance(item, UnreadableLineError):
                await session.report_unreadable(str(item))
                continue
            if not item.data.strip():
                continue  # blank lines are skipped
            try:
                request = self._protocol.parse_request(item.data)
            except UnreadableLineError as error:
                await refuse_unreadable(session, item.data, error)
                continue
            if not await session.handle(request, received_at=item.received_at):
                # shutdown: nothing more is read, so no approval could be answered — reject them now
                session.connection_lost()
                return
