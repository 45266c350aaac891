"""AgentServerRunner: the turn-stream protocol over stdin/stdout, one JSON object per line."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Callable
from typing import BinaryIO

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

_EOF = b""
_CHUNK = 64 * 1024


class _LineReader:
    """Reads lines on a thread (stdin may be a pipe, a file or a terminal) and hands them to the event loop."""

    def __init__(self, stream: BinaryIO, max_line_bytes: int) -> None:
        self._stream = stream
        self._max = max_line_bytes
        self._queue: asyncio.Queue[bytes | UnreadableLineError] = asyncio.Queue()

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._pump, args=(loop,), name="ironhive-stdin", daemon=True).start()

    async def next(self) -> bytes | UnreadableLineError:
        return await self._queue.get()

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        put = self._queue.put_nowait
        try:
            while True:
                line = self._stream.readline(self._max + 1)
                if not line:
                    break
                if len(line) > self._max and not line.endswith(b"\n"):
                    while (rest := self._stream.readline(_CHUNK)) and not rest.endswith(b"\n"):
                        pass
                    loop.call_soon_threadsafe(put, UnreadableLineError(f"the line is longer than {self._max} bytes"))
                    if not rest:
                        break
                    continue
                loop.call_soon_threadsafe(put, line)
        except (OSError, ValueError) as error:  # stdin closed under us: treat as end of input
            log.debug("stdin reader stopped: %s", error)
        finally:
            loop.call_soon_threadsafe(put, _EOF)


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
        self._write_lock = asyncio.Lock()
        self._output_closed = False

    async def write(self, event: ServerEvent) -> None:
        """Write one event as a line and flush it (all writes go through one lock)."""
        line = (self._protocol.serialize_event(event) + "\n").encode("utf-8")
        async with self._write_lock:
            if self._output_closed:
                return
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
                if item == _EOF:
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
                    break
