"""AgentServerRunner: the turn-stream protocol over stdin/stdout, one JSON object per line."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import BinaryIO, TypeAlias

from ironhive.adapters.protocol.models import (
    DEFAULT_PROTOCOL,
    ContextUpdateRequest,
    ProtocolRegistry,
    ServerEvent,
    UnreadableLineError,
)
from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.adapters.server.turns import ProcessMessage, TurnSession

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024

_Item: TypeAlias = bytes | UnreadableLineError | None
"""A line (without its newline), a line that could not be taken, or None for the end of input."""


class _LineReader:
    """Reads lines on a thread (stdin may be a pipe, a file or a terminal) and hands them to the event loop.

    A line may hold ``max_line_bytes`` bytes, its newline (and a ``\\r`` before it) not counted. The stream's file
    descriptor is read directly when it has one: a thread blocked in a buffered object's ``readline`` holds that
    object's lock, and when the object is ``sys.stdin`` the interpreter aborts at exit ("could not acquire lock for
    <stdin> at interpreter shutdown") whenever the runner returns on ``shutdown`` while the client keeps stdin open.
    """

    def __init__(self, stream: BinaryIO, max_line_bytes: int) -> None:
        self._stream = stream
        self._max = max_line_bytes
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._pump, args=(loop,), name="ironhive-stdin", daemon=True).start()

    async def next(self) -> _Item:
        return await self._queue.get()

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

    def _line(self, line: bytes) -> bytes | UnreadableLineError:
        line = line.removesuffix(b"\r")
        return UnreadableLineError(f"the line is longer than {self._max} bytes") if len(line) > self._max else line

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        pending = bytearray()  # the start of a line whose newline has not arrived yet
        skipping = False  # inside a line already reported as too long
        try:
            read = self._chunks()
            while chunk := read():
                batch: list[_Item] = []
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    if skipping:
                        skipping = False
                    elif pending:
                        pending += chunk[start:end]
                        batch.append(self._line(bytes(pending)))
                    else:
                        batch.append(self._line(chunk[start:end]))
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
                    loop.call_soon_threadsafe(self._put_all, batch)
        except (OSError, ValueError) as error:  # stdin closed under us: treat as end of input
            log.debug("stdin reader stopped: %s", error)
        except RuntimeError:  # the event loop is closed: the runner has returned and nobody reads any more
            return
        last: list[_Item] = [self._line(bytes(pending))] if pending and not skipping else []
        with contextlib.suppress(RuntimeError):  # the event loop is closed
            loop.call_soon_threadsafe(self._put_all, [*last, None])


class AgentServerRunner:
    """Serves the turn-stream protocol on stdin/stdout.

    Reads requests while turns run, answers every unreadable line with an ``error`` event and goes on, and on
    ``shutdown`` or end of input finishes the turns already received, then returns. Only protocol lines are written to
    stdout; diagnostics go to the logger (stderr).

    Args:
        process_message: The processor of user messages (the same signature as the HTTP runner's).
        hitl_bridge: Approvals over the wire; attached while the runner runs.
        protocol: The request and event types (extend it with ``with_request``/``with_event``).
        stdin: Where requests come from (default: the process's stdin).
        stdout: Where events go (default: the process's stdout).
        on_context_update: Called for every ``context_update``.
        skip_context_enrichment: Do not prefix messages with the client's working path.
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
    ) -> None:
        self._process = process_message
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
        )
        async with session:
            while True:
                item = await reader.next()
                if item is None:
                    session.connection_lost()  # end of input: nobody is left to answer approvals
                    break
                if isinstance(item, UnreadableLineError):
                    await session.report_unreadable(str(item))
                    continue
                if not item.strip():
                    continue  # blank lines are skipped
                try:
                    request = self._protocol.parse_request(item)
                except UnreadableLineError as error:
                    await session.report_unreadable(str(error))
                    continue
                if not await session.handle(request):
                    # shutdown: nothing more is read, so no approval could be answered — reject them now
                    session.connection_lost()
                    break
