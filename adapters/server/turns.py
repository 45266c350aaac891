"""The transport-independent core of a server session: dispatches requests, runs turns in order, writes events."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from ironhive.adapters.protocol.models import (
    CancelRequest,
    ContextUpdateRequest,
    ErrorEvent,
    HitlResponseRequest,
    ServerEvent,
    ServerRequest,
    ShutdownRequest,
    TurnEndEvent,
    UserMessageRequest,
)
from ironhive.adapters.server.hitl_bridge import HitlBridge

ProcessMessage = Callable[[UserMessageRequest], AsyncIterator[ServerEvent]]
"""The processor both runners serve: one user message in, its events out (cancellation via task cancel)."""

SendEvent = Callable[[ServerEvent], Awaitable[None]]

log = logging.getLogger(__name__)

_STOP = object()


def unreadable(message: str) -> ErrorEvent:
    """The event answering a line that is not a readable request."""
    return ErrorEvent(message=f"Unreadable request skipped: {message}")


class TurnSession:
    """Takes requests as they arrive and runs the turns they ask for, one at a time, in arrival order.

    Requests are dispatched as soon as they are read — a ``hitl_response`` or ``cancel`` never waits behind a queued
    message. Every ``user_message`` ends with exactly one ``turn_end``: after the processor's events, after an
    ``error`` when the processor fails, and after a cancel.

    Args:
        process_message: The processor.
        send: Writes one event to the client (serialised by the transport).
        hitl_bridge: Receives ``hitl_response`` answers; attached to ``send`` while the session runs.
        on_context_update: Called for every ``context_update``.
        skip_context_enrichment: Do not prefix messages with the working path.
    """

    def __init__(
        self,
        process_message: ProcessMessage,
        send: SendEvent,
        *,
        hitl_bridge: HitlBridge | None = None,
        on_context_update: Callable[[ContextUpdateRequest], None] | None = None,
        skip_context_enrichment: bool = False,
    ) -> None:
        self._process = process_message
        self._send = send
        self._bridge = hitl_bridge
        self._on_context_update = on_context_update
        self._skip_enrichment = skip_context_enrichment
        self._working_path: str | None = None
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._current: asyncio.Task[None] | None = None
        self._closed = False

    async def __aenter__(self) -> TurnSession:
        if self._bridge is not None:
            self._bridge.attach(self._send)
        self._worker = asyncio.create_task(self._run_turns())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if not self._closed:
            self.close()
        try:
            await asyncio.shield(self._worker)
        finally:
            if self._bridge is not None:
                self._bridge.detach()

    def connection_lost(self) -> None:
        """The client is gone: pending and later approval requests are rejected; received turns still run."""
        if self._bridge is not None:
            self._bridge.detach()

    def close(self) -> None:
        """Stop taking messages; the turns already received still run."""
        self._closed = True
        self._queue.put_nowait(_STOP)

    async def wait_closed(self) -> None:
        """Wait until every received turn has finished."""
        await asyncio.shield(self._worker)

    async def handle(self, request: ServerRequest) -> bool:
        """Act on one request; returns False once the session takes no more requests (``shutdown``)."""
        match request:
            case UserMessageRequest():
                if not self._closed:
                    self._queue.put_nowait(request)
            case CancelRequest():
                if self._current is not None and not self._current.done():
                    self._current.cancel()
            case ShutdownRequest():
                self.close()
                return False
            case HitlResponseRequest():
                if self._bridge is None:
                    log.warning("hitl_response dropped: no approval bridge")
                else:
                    self._bridge.resolve(request)
            case ContextUpdateRequest():
                self._working_path = request.working_path or None
                if self._on_context_update is not None:
                    self._on_context_update(request)
            case _:
                await self._send(unreadable(f"'{request.type}' is not handled by this agent"))
        return True

    async def report_unreadable(self, message: str) -> None:
        """Answer an unreadable line with an ``error`` event; the session goes on."""
        await self._send(unreadable(message))

    def _enriched(self, request: UserMessageRequest) -> UserMessageRequest:
        if self._skip_enrichment or not self._working_path:
            return request
        return request.model_copy(update={"content": f"[WorkingPath: {self._working_path}]\n\n{request.content}"})

    async def _run_turns(self) -> None:
        while (item := await self._queue.get()) is not _STOP:
            assert isinstance(item, UserMessageRequest)
            await self._run_turn(self._enriched(item))

    async def _run_turn(self, request: UserMessageRequest) -> None:
        closing: list[TurnEndEvent] = []

        async def stream() -> None:
            async for event in self._process(request):
                if isinstance(event, TurnEndEvent):
                    closing[:] = [event]  # held back: written once, last
                else:
                    await self._send(event)

        self._current = asyncio.create_task(stream())
        try:
            await self._current
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the session itself is being cancelled, not just this turn
            closing.clear()  # a cancelled turn's usage is incomplete
        except Exception as error:
            log.debug("turn failed", exc_info=True)
            await self._send(ErrorEvent(message=str(error) or type(error).__name__))
        finally:
            self._current = None
        await self._send(closing[0] if closing else TurnEndEvent.from_counts())
