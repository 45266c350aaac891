"""The transport-independent core of a server session: dispatches requests, runs turns in order, writes events."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable

from pydantic_core import from_json

from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.protocol.models import (
    CancelRequest,
    ContextUpdateRequest,
    ErrorEvent,
    HitlResponseRequest,
    ServerEvent,
    ServerRequest,
    ShutdownRequest,
    ToolEndEvent,
    ToolStartEvent,
    TurnEndEvent,
    UnreadableLineError,
    UserMessageRequest,
)

ProcessMessage = Callable[[UserMessageRequest], AsyncIterator[ServerEvent]]
"""The processor both runners serve: one user message in, its events out (cancellation via task cancel)."""

SendEvent = Callable[[ServerEvent], Awaitable[None]]

log = logging.getLogger(__name__)

QUEUE_FULL = "The turn queue is full"
DROPPED_ANSWER = "Approval answer dropped: "
INVALID_MESSAGE = "Invalid user_message: "
CANCELLED_CALL = "Cancelled: the turn was cancelled before this call finished."
UNFINISHED_CALL = "The turn ended before the tool's outcome was known."


def unreadable(message: str) -> ErrorEvent:
    """The event answering a line that is not a readable request."""
    return ErrorEvent(message=f"Unreadable request skipped: {message}")


def request_type(line: str | bytes) -> str | None:
    """The ``type`` of a request line that is a JSON object with a string ``type``, else None.

    Used on a line the protocol refused, to tell a malformed ``user_message`` (which must still end its turn) from
    any other unreadable line.
    """
    try:
        value = from_json(line, allow_inf_nan=False)
    except ValueError:
        return None
    tag = value.get("type") if isinstance(value, dict) else None
    return tag if isinstance(tag, str) else None


async def refuse_unreadable(session: TurnSession, line: str | bytes, error: UnreadableLineError) -> None:
    """Answer a request line the protocol refused: a malformed ``user_message`` still ends its turn (one ``error``
    and one ``turn_end``, in its place in the order, no model call); any other line gets an unreadable-line ``error``.
    """
    if request_type(line) == "user_message":
        session.reject(str(error).removeprefix("user_message."))
    else:
        await session.report_unreadable(str(error))


def message_size(request: UserMessageRequest) -> int:
    """What a queued message counts towards the byte limit: its content's UTF-8 size."""
    return len(request.content.encode("utf-8", "surrogatepass"))


class _Run:
    """Consecutive queue places answered alike, kept as one count so a flood costs no memory per message."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 1


class _Refused(_Run):
    """Consecutive messages refused because the queue was full: their ``error`` + ``turn_end`` pairs, in order."""

    __slots__ = ()


class _Cancelled(_Run):
    """Consecutive queued turns cancelled before they ran: each still ends with a ``turn_end``, in its place."""

    __slots__ = ()


_Queued = tuple[UserMessageRequest | ErrorEvent, int, str | None]
"""A waiting message (or the error answering an unreadable one), its content bytes and its key (see ``submit``)."""


class TurnSession:
    """Takes requests as they arrive and runs the turns they ask for, one at a time, in arrival order.

    Requests are dispatched as soon as they are read — a ``hitl_response`` or ``cancel`` never waits behind a queued
    message. Every ``user_message`` ends with exactly one ``turn_end``: after the processor's events, after an
    ``error`` when the processor fails, and after a cancel; a message the protocol could not read (a wrong-typed
    field) takes its place in the order as an ``error`` and a ``turn_end`` (see :meth:`reject`). Every ``tool_start``
    gets its ``tool_end`` before the ``turn_end``: a call still open when the turn is cancelled or fails ends as a
    failure. A ``hitl_response`` that no request takes is answered with an ``error`` event saying why.

    The messages waiting behind the running turn may be limited in number and in content bytes. A message beyond a
    limit is refused, and in its place in the order the client gets an ``error`` ("The turn queue is full ...") and a
    ``turn_end``, so a client counting turns stays in step; consecutive refusals share one counter, so a flood costs
    no memory per refused message.

    Args:
        process_message: The processor.
        send: Writes one event to the client (serialised by the transport).
        hitl_bridge: Receives ``hitl_response`` answers; attached to ``send`` while the session runs.
        on_context_update: Called for every ``context_update``.
        skip_context_enrichment: Do not prefix messages with the working path.
        max_queued_messages: Most messages waiting behind the running turn (``None``: no limit).
        max_queued_bytes: Most content bytes (UTF-8) of the waiting messages together (``None``: no limit).
    """

    def __init__(
        self,
        process_message: ProcessMessage,
        send: SendEvent,
        *,
        hitl_bridge: HitlBridge | None = None,
        on_context_update: Callable[[ContextUpdateRequest], None] | None = None,
        skip_context_enrichment: bool = False,
        max_queued_messages: int | None = None,
        max_queued_bytes: int | None = None,
    ) -> None:
        if (max_queued_messages is not None and max_queued_messages < 1) or (
            max_queued_bytes is not None and max_queued_bytes < 1
        ):
            raise ValueError("max_queued_messages and max_queued_bytes must be positive")
        self._process = process_message
        self._send = send
        self._bridge = hitl_bridge
        self._on_context_update = on_context_update
        self._skip_enrichment = skip_context_enrichment
        self._max_messages = max_queued_messages
        self._max_bytes = max_queued_bytes
        self._working_path: str | None = None
        self._queue: deque[_Queued | _Refused | _Cancelled] = deque()
        self._queued_messages = 0
        self._queued_bytes = 0
        self._queue_changed = asyncio.Event()
        self._current: asyncio.Task[None] | None = None
        self._current_key: str | None = None
        self._working = False
        self._closed = False

    @property
    def queued(self) -> tuple[int, int]:
        """The messages waiting behind the running turn: their number and content bytes."""
        return self._queued_messages, self._queued_bytes

    @property
    def idle(self) -> bool:
        """Whether no turn runs, waits or is still being ended."""
        return not self._queue and not self._working

    def submit(self, request: UserMessageRequest, key: str) -> bool:
        """Queue a message under ``key`` (what :meth:`cancel_turn` names it by).

        Returns:
            False, nothing queued, when the session is closed or the message does not fit the queue limits.
        """
        if self._closed or self._full(message_size(request)):
            return False
        self._enqueue(request, key)
        return True

    def cancel_turn(self, key: str) -> bool:
        """Cancel the turn submitted under ``key``: running, it is cancelled as by a ``cancel`` request; waiting, it
        is taken out and only its ``turn_end`` is written, in its place. Returns whether there was such a turn."""
        if key == self._current_key:
            return self.cancel_running()
        for index, item in enumerate(self._queue):
            if isinstance(item, tuple) and item[2] == key:
                self._cancel_queued(index)
                return True
        return False

    def cancel_running(self) -> bool:
        """Cancel the running turn, as a ``cancel`` request does; whether one was running (and not cancelled yet)."""
        if self._current is not None and not self._current.done() and not self._current.cancelling():
            self._current.cancel()
            return True
        return False

    def cancel_all(self) -> int:
        """Cancel the running turn and every waiting one (each still ends with its ``turn_end``); how many."""
        cancelled = 0
        for index in range(len(self._queue) - 1, -1, -1):
            if isinstance(self._queue[index], tuple):
                self._cancel_queued(index)
                cancelled += 1
        return cancelled + self.cancel_running()

    def _cancel_queued(self, index: int) -> None:
        """Replace the waiting message at ``index`` by a bare ``turn_end``, merged with its cancelled neighbours (so
        cancelling costs no memory per message)."""
        item = self._queue[index]
        assert isinstance(item, tuple)
        self._queued_messages -= 1
        self._queued_bytes -= item[1]
        before = self._queue[index - 1] if index > 0 else None
        after = self._queue[index + 1] if index + 1 < len(self._queue) else None
        if isinstance(before, _Cancelled):
            before.count += 1
            del self._queue[index]
            if isinstance(after, _Cancelled):
                before.count += after.count
                del self._queue[index]
        elif isinstance(after, _Cancelled):
            after.count += 1
            del self._queue[index]
        else:
            self._queue[index] = _Cancelled()

    def start(self) -> None:
        """Start running the turns (what ``async with`` does), attaching the approval bridge when there is one."""
        if self._bridge is not None:
            self._bridge.attach(self._send)
        self._worker = asyncio.create_task(self._run_turns())

    async def __aenter__(self) -> TurnSession:
        self.start()
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
        self._queue_changed.set()

    async def wait_closed(self) -> None:
        """Wait until every received turn has finished."""
        await asyncio.shield(self._worker)

    async def handle(self, request: ServerRequest, *, received_at: float | None = None) -> bool:
        """Act on one request; returns False once the session takes no more requests (``shutdown``).

        Args:
            request: The request.
            received_at: When it was received (``time.monotonic()``); an answer without id must come after its
                request (see :meth:`HitlBridge.resolve`). Now when not given.
        """
        match request:
            case UserMessageRequest():
                if not self._closed:
                    self._enqueue(request)
            case CancelRequest():
                self.cancel_running()
            case ShutdownRequest():
                self.close()
                return False
            case HitlResponseRequest():
                if self._bridge is None:
                    log.warning("hitl_response dropped: no approval bridge")
                    await self._send(ErrorEvent(message=DROPPED_ANSWER + "this agent asks no approvals"))
                elif (problem := self._bridge.resolve(request, received_at=received_at)) is not None:
                    await self._send(ErrorEvent(message=DROPPED_ANSWER + problem))
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

    def reject(self, message: str) -> None:
        """Answer a ``user_message`` that could not be read: in its place in the order, an ``error`` and a ``turn_end``.

        No model is called. The refusal counts as a waiting message (of no bytes) towards the queue limits.

        Args:
            message: Why it could not be read (the protocol's description of the bad field).
        """
        if not self._closed:
            self._enqueue(ErrorEvent(message=INVALID_MESSAGE + message))

    def _enriched(self, request: UserMessageRequest) -> UserMessageRequest:
        if self._skip_enrichment or not self._working_path:
            return request
        return request.model_copy(update={"content": f"[WorkingPath: {self._working_path}]\n\n{request.content}"})

    def _enqueue(self, request: UserMessageRequest | ErrorEvent, key: str | None = None) -> None:
        size = message_size(request) if isinstance(request, UserMessageRequest) else 0
        if not self._full(size):
            self._queue.append((request, size, key))
            self._queued_messages += 1
            self._queued_bytes += size
        elif self._queue and isinstance(last := self._queue[-1], _Refused):
            last.count += 1
        else:
            self._queue.append(_Refused())
        self._queue_changed.set()

    def _full(self, size: int) -> bool:
        return (self._max_messages is not None and self._queued_messages >= self._max_messages) or (
            self._max_bytes is not None and self._queued_bytes + size > self._max_bytes
        )

    def _refusal(self) -> ErrorEvent:
        limits = [
            *([f"{self._max_messages} messages"] if self._max_messages is not None else []),
            *([f"{self._max_bytes} bytes"] if self._max_bytes is not None else []),
        ]
        return ErrorEvent(
            message=f"{QUEUE_FULL} (at most {' and '.join(limits)} may wait): the message was not taken; "
            "send it again when a turn has ended"
        )

    async def _run_turns(self) -> None:
        while True:
            while not self._queue:
                if self._closed:
                    return
                self._queue_changed.clear()
                await self._queue_changed.wait()
            item = self._queue.popleft()
            self._working = True
            try:
                await self._take(item)
            finally:
                self._working = False
                self._current_key = None

    async def _take(self, item: _Queued | _Refused | _Cancelled) -> None:
        if isinstance(item, _Refused):
            for _ in range(item.count):
                await self._send(self._refusal())
                await self._send(TurnEndEvent.from_counts())
            return
        if isinstance(item, _Cancelled):
            for _ in range(item.count):
                await self._send(TurnEndEvent.from_counts())
            return
        request, size, self._current_key = item
        self._queued_messages -= 1
        self._queued_bytes -= size
        if isinstance(request, ErrorEvent):
            await self._send(request)
            await self._send(TurnEndEvent.from_counts())
        else:
            await self._run_turn(self._enriched(request))

    async def _run_turn(self, request: UserMessageRequest) -> None:
        closing: list[TurnEndEvent] = []
        open_calls: dict[str, str] = {}  # call_id -> tool of every tool_start still waiting for its tool_end

        async def stream() -> None:
            events = self._process(request)
            try:
                async for event in events:
                    if isinstance(event, TurnEndEvent):
                        closing[:] = [event]  # held back: written once, last
                        continue
                    if isinstance(event, ToolStartEvent) and event.call_id is not None:
                        open_calls[event.call_id] = event.tool
                    elif isinstance(event, ToolEndEvent) and event.call_id is not None:
                        open_calls.pop(event.call_id, None)
                    await self._send(event)
            finally:
                # a turn stopped while an event was being written releases what the processor holds now, not at GC
                if (close := getattr(events, "aclose", None)) is not None:
                    await close()

        unfinished = UNFINISHED_CALL

        self._current = asyncio.create_task(stream())
        try:
            await self._current
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the session itself is being cancelled, not just this turn
            closing.clear()  # a cancelled turn's usage is incomplete
            unfinished = CANCELLED_CALL
        except Exception as error:
            log.debug("turn failed", exc_info=True)
            await self._end_calls(open_calls, UNFINISHED_CALL)
            await self._send(ErrorEvent(message=str(error) or type(error).__name__))
        finally:
            self._current = None
        await self._end_calls(open_calls, unfinished)
        await self._send(closing[0] if closing else TurnEndEvent.from_counts())

    async def _end_calls(self, open_calls: dict[str, str], output: str) -> None:
        """Give every call still open its ``tool_end`` (a failure: its outcome is unknown)."""
        for call_id, tool in open_calls.items():
            await self._send(ToolEndEvent(tool=tool, success=False, output=output, call_id=call_id))
        open_calls.clear()
