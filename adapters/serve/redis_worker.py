"""RedisTurnWorker: runs the turns queued on Redis, each session's in order, a silent worker's turns taken over."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from ironhive.adapters.serve import redis_scripts as scripts
from ironhive.adapters.serve.hub import SessionRuntime
from ironhive.adapters.serve.redis_hub import ControlMessage, ensure_group
from ironhive.adapters.serve.redis_keys import WORKERS_GROUP, QueuedTurn, TurnKeys, text
from ironhive.adapters.serve.redis_log import EVENT_FIELD
from ironhive.adapters.serve.turn_capture import CapturingStore
from ironhive.adapters.server.turns import TurnSession
from ironhive.domain.errors import SessionNotFoundError
from ironhive.ports.chat import ChatMessage
from ironhive.ports.sessions import SessionStore
from ironhive.protocol.models import (
    CancelRequest,
    ErrorEvent,
    HitlResponseRequest,
    ServerEvent,
    TurnEndEvent,
    TurnRestartedEvent,
    UnreadableLineError,
    UserMessageRequest,
    parse_request,
    serialize_event,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import Pipeline

    from ironhive.adapters.sessions.redis_store import RedisSessionStore

log = logging.getLogger(__name__)

OpenTurnRuntime = Callable[[str, SessionStore], Awaitable[SessionRuntime]]
"""Builds a session's agent (by id) for one turn on the given store, its history loaded from it."""

MARKER_TTL_SECONDS = 24 * 3600
"""How long a turn's started marker lives (it goes when the turn finishes)."""


def consumer_name() -> str:
    """A name no other worker has: host, process and a random part."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@dataclass(slots=True)
class _Held:
    """A turn this worker holds: waiting for the session's previous turn, or running."""

    turn: QueuedTurn
    task: asyncio.Task[None] | None = None
    session: TurnSession | None = None
    running: bool = False
    behind: bool = False  # waiting for the session's previous turn (it needs no slot meanwhile)
    lost: bool = False
    cancel_asked: bool = False
    pending_answers: list[tuple[HitlResponseRequest, float]] = field(default_factory=list)


class RedisTurnWorker:
    """Takes turns from the turns stream (consumer group ``workers``) and runs up to ``concurrency`` at once.

    A session's turn number ``k`` starts only once ``k - 1`` is done (polled, so no lock is held while waiting), so a
    session's turns run one at a time and in order whichever workers hold them. While the worker holds a turn it
    resets the entry's idle time every third of the visibility timeout; every worker takes over (``XAUTOCLAIM``)
    entries idle longer than that, from a worker that was killed or hangs. A turn taken over after it had started
    begins again after a ``turn_restarted`` event. Every event a turn writes is checked in Redis against the turn still
    being this worker's and not finished, and a turn finishes in one transaction: its history (through the store's
    ``append_turn_once``), its ``turn_end``, the session's done mark and the ack; a turn finished before is only acked.
    So the history holds each turn once and the log one ``turn_end`` per turn.

    Answers and cancels arrive on the control channel; a cancel asked for a turn still waiting is found in its
    ``cancelled`` key when it would start, and it then ends without running.

    Args:
        redis: The client (owned by the caller).
        store: The session store (its ``append_turn_once`` finishes a turn with history).
        open_runtime: Builds a session's agent for one turn on a given store.
        keys: The key names.
        concurrency: Most turns running at once.
        visibility_timeout_seconds: How long a silent worker's turn waits before another takes it over.
        event_log_size: About how many events each session's stream keeps.
        consumer: This worker's consumer name (unique; made up when None).
        poll_seconds: How often a turn waiting for its session's previous one looks again.
    """

    def __init__(
        self,
        redis: Redis,
        store: RedisSessionStore,
        open_runtime: OpenTurnRuntime,
        *,
        keys: TurnKeys,
        concurrency: int,
        visibility_timeout_seconds: float,
        event_log_size: int,
        consumer: str | None = None,
        poll_seconds: float = 0.05,
    ) -> None:
        if concurrency < 1 or visibility_timeout_seconds <= 0 or event_log_size < 1:
            raise ValueError("concurrency, visibility_timeout_seconds and event_log_size must be positive")
        self._redis = redis
        self._store = store
        self._open_runtime = open_runtime
        self._keys = keys
        self._concurrency = concurrency
        self._visibility_ms = max(1, round(visibility_timeout_seconds * 1000))
        self._log_size = event_log_size
        self.consumer = consumer or consumer_name()
        self._poll = poll_seconds
        self._slots = asyncio.Semaphore(concurrency)
        self._held: dict[str, _Held] = {}  # by entry id
        self._wakeups: dict[str, asyncio.Event] = {}  # by session: set when one of its turns finishes
        self._room = asyncio.Event()
        self._stopping = asyncio.Event()
        self._append = redis.register_script(scripts.APPEND)
        self._finish = redis.register_script(scripts.FINISH)
        self._refresh = redis.register_script(scripts.REFRESH)

    @property
    def held(self) -> int:
        """Turns this worker holds now (running or waiting for their session's previous turn)."""
        return len(self._held)

    async def run(self) -> None:
        """Take and run turns until :meth:`stop`; then release the turns not started and let the running ones end."""
        await ensure_group(self._redis, self._keys)
        pubsub = self._redis.pubsub()
        await pubsub.subscribe(self._keys.control)  # before any turn is taken: no answer or cancel is missed
        loops = [
            asyncio.create_task(self._listen(pubsub)),
            asyncio.create_task(self._refresh_claims()),
            asyncio.create_task(self._take_new()),
            asyncio.create_task(self._take_over()),
        ]
        try:
            await self._stopping.wait()
            for task in loops[2:]:
                task.cancel()
            await asyncio.gather(*loops[2:], return_exceptions=True)
            await self._release(lambda held: not held.running)
            while self._held:
                await asyncio.wait([held.task for held in self._held.values() if held.task is not None])
            await self._leave_group()
        finally:
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
            with contextlib.suppress(RedisError, OSError):
                await pubsub.aclose()  # type: ignore[no-untyped-call,unused-ignore]  # untyped in some redis-py 8.x
            for held in list(self._held.values()):
                if held.task is not None:
                    held.task.cancel()

    async def _leave_group(self) -> None:
        """Remove this worker's consumer from the group when it holds nothing (deleting a consumer drops what it
        holds, so one with turns handed over but not yet taken stays: an empty name, harmless)."""
        with contextlib.suppress(RedisError, OSError):
            delivered: Any = await self._redis.xpending_range(
                self._keys.turns, WORKERS_GROUP, "-", "+", 1, consumername=self.consumer
            )
            if not delivered:
                await self._redis.xgroup_delconsumer(self._keys.turns, WORKERS_GROUP, self.consumer)

    def stop(self) -> None:
        """Stop taking turns; :meth:`run` returns once the running ones have ended."""
        self._stopping.set()

    async def abandon(self) -> None:
        """Give up every held turn at once (a second signal): another worker takes them over immediately."""
        for held in self._held.values():
            held.lost = True
            if held.session is not None:
                await held.session.handle(CancelRequest())
        await self._release(lambda held: True)

    # --- taking turns ------------------------------------------------------------------------------------------------

    async def _take_new(self) -> None:
        # Take only what a slot is free for, so the other workers get the rest; turns waiting behind their session's
        # previous turn need no slot, so more are taken meanwhile (up to a bound on all held).
        while True:
            ready = sum(not held.behind for held in self._held.values())
            free = min(self._concurrency - ready, 4 * self._concurrency - len(self._held))
            if free <= 0:
                self._room.clear()
                await self._room.wait()
                continue
            try:
                reply: Any = await self._redis.xreadgroup(
                    WORKERS_GROUP, self.consumer, {self._keys.turns: ">"}, count=free, block=1000
                )
            except (RedisError, OSError):
                log.warning("reading the turns stream failed; trying again", exc_info=True)
                await asyncio.sleep(1.0)
                continue
            for _stream, entries in reply or ():
                for entry_id, fields in entries:
                    await self._hold(entry_id, fields, reclaimed=False)

    async def _take_over(self) -> None:
        # Turns taken over bypass the room limit: they may be what the held turns wait for. One call looks at a
        # bounded part of the pending list, so the cursor goes on from where the last call stopped.
        cursor = "0-0"
        while True:
            await asyncio.sleep(min(self._visibility_ms / 3000, 1.0))
            try:
                claimed: Any = await self._redis.xautoclaim(
                    self._keys.turns, WORKERS_GROUP, self.consumer, self._visibility_ms, cursor, count=self._concurrency
                )
            except (RedisError, OSError):
                log.warning("taking over idle turns failed; trying again", exc_info=True)
                continue
            cursor = text(claimed[0])
            for entry_id, fields in claimed[1]:
                if fields is not None and text(entry_id) not in self._held:
                    await self._hold(entry_id, fields, reclaimed=True)

    async def _hold(self, entry_id: bytes | str, fields: Mapping[bytes | str, bytes | str], *, reclaimed: bool) -> None:
        try:
            turn = QueuedTurn.read(entry_id, fields, reclaimed=reclaimed)
        except ValueError:
            log.warning("dropping a turns stream entry that is not a turn: %s", text(entry_id))
            await self._drop_entry(text(entry_id))
            return
        held = _Held(turn=turn)
        self._held[turn.entry_id] = held
        held.task = asyncio.create_task(self._handle(held))

    async def _drop_entry(self, entry_id: str) -> None:
        with contextlib.suppress(RedisError, OSError):
            await self._redis.xack(self._keys.turns, WORKERS_GROUP, entry_id)
            await self._redis.xdel(self._keys.turns, entry_id)

    async def _refresh_claims(self) -> None:
        while True:
            await asyncio.sleep(self._visibility_ms / 3000)
            ids = list(self._held)
            if not ids:
                continue
            try:
                lost = await self._refresh(keys=[self._keys.turns], args=[WORKERS_GROUP, self.consumer, *ids])
            except (RedisError, OSError):
                log.warning("refreshing the held turns failed; trying again", exc_info=True)
                continue
            for entry_id in lost or ():
                if (held := self._held.get(text(entry_id))) is not None:
                    await self._lose(held)

    async def _lose(self, held: _Held) -> None:
        """Another worker took the turn over: stop it here, writing nothing more."""
        log.warning("turn %s was taken over by another worker", held.turn.turn_id)
        held.lost = True
        if held.session is not None:
            await held.session.handle(CancelRequest())
        elif held.task is not None and not held.running:
            held.task.cancel()

    async def _release(self, which: Callable[[_Held], bool]) -> None:
        """Make the chosen held turns idle past the visibility timeout, so another worker takes them at once; so too
        the entries delivered to this worker that it never held (a read cut short by the stop)."""
        chosen = [held for held in self._held.values() if which(held)]
        for held in chosen:
            if held.task is not None and not held.running:
                held.task.cancel()
        ids: list[int | bytes | str | memoryview[int]] = [held.turn.entry_id for held in chosen]
        with contextlib.suppress(RedisError, OSError):
            delivered: Any = await self._redis.xpending_range(
                self._keys.turns, WORKERS_GROUP, "-", "+", 4 * self._concurrency, consumername=self.consumer
            )
            ids += [entry_id for entry in delivered if text(entry_id := entry["message_id"]) not in self._held]
        if ids:
            with contextlib.suppress(RedisError, OSError):
                await self._redis.xclaim(
                    self._keys.turns,
                    WORKERS_GROUP,
                    self.consumer,
                    0,
                    ids,
                    idle=self._visibility_ms + 1,
                    justid=True,
                )

    # --- one turn ----------------------------------------------------------------------------------------------------

    async def _handle(self, held: _Held) -> None:
        turn = held.turn
        try:
            if not await self._wait_for_previous(held):
                return
            async with self._slots:
                held.running = True
                await self._run(held)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("turn %s of session %s failed in the worker", turn.turn_id, turn.session_id)
        finally:
            self._held.pop(turn.entry_id, None)
            self._room.set()

    async def _wait_for_previous(self, held: _Held) -> bool:
        """Wait until the session's previous turn is done; False when this one is done already (then acked).

        A finish announces itself on the control channel, which wakes the wait; polling with a growing pause covers
        an announcement that was missed.
        """
        turn, delay = held.turn, self._poll
        try:
            while True:
                wakeup = self._wakeups.setdefault(turn.session_id, asyncio.Event())  # before reading: none missed
                done = int(await self._redis.get(self._keys.done(turn.session_id)) or 0)
                if done >= turn.seq:
                    await self._drop_entry(turn.entry_id)
                    return False
                if done == turn.seq - 1:
                    return True
                if not held.behind:
                    held.behind = True
                    self._room.set()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await wakeup.wait()
                delay = min(delay * 2, 1.0)
        finally:
            if held.behind:
                held.behind = False
            waiting = (other for other in self._held.values() if other is not held and not other.running)
            if not any(other.turn.session_id == turn.session_id for other in waiting):
                self._wakeups.pop(turn.session_id, None)

    async def _run(self, held: _Held) -> None:
        turn, keys = held.turn, self._keys
        # one round trip: mark the turn started (learning whether an earlier attempt had) and look for a cancel
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.set(keys.started(turn.turn_id), 1, ex=MARKER_TTL_SECONDS, get=True)
            pipe.exists(keys.cancelled(turn.turn_id))
            started_before, cancelled = await pipe.execute()
        if turn.reclaimed and started_before is not None:
            await self._write(held, TurnRestartedEvent(turn_id=turn.turn_id))
        if held.cancel_asked or cancelled:
            await self._finish_empty(held, TurnEndEvent.from_counts())
            return
        try:
            message = parse_request(turn.request)
            if not isinstance(message, UserMessageRequest):
                raise UnreadableLineError(f"a turn carries a {message.type}, not a user_message")
        except UnreadableLineError as error:
            await self._write(held, ErrorEvent(message=f"Invalid user_message: {error}"))
            await self._finish_empty(held, TurnEndEvent.from_counts())
            return
        capture = CapturingStore(self._store)
        try:
            runtime = await self._open_runtime(turn.session_id, capture)
        except Exception as error:
            log.debug("opening the session's agent failed", exc_info=True)
            await self._write(held, ErrorEvent(message=str(error) or type(error).__name__))
            await self._finish_empty(held, TurnEndEvent.from_counts())
            return
        ends: list[TurnEndEvent] = []

        async def send(event: ServerEvent) -> None:
            if isinstance(event, TurnEndEvent):
                ends[:] = [event]  # written by the finish, with the history
            else:
                await self._write(held, event)

        process = runtime.process

        async def guarded(request: UserMessageRequest) -> AsyncIterator[ServerEvent]:
            # A cancel that came before the turn began (no task to cancel yet) cancels it here, as it starts.
            if held.cancel_asked and (task := asyncio.current_task()) is not None:
                task.cancel()
                await asyncio.sleep(0)
            async for event in process(request):
                yield event

        try:
            async with TurnSession(guarded, send, hitl_bridge=runtime.bridge) as session:
                held.session = session
                for answer, received_at in held.pending_answers:
                    await session.handle(answer, received_at=received_at)
                held.pending_answers.clear()
                await session.handle(message)
                session.close()
                await session.wait_closed()
        finally:
            held.session = None
            with contextlib.suppress(Exception):
                await runtime.close()
        end = ends[0] if ends else TurnEndEvent.from_counts()
        if capture.messages is None:
            await self._finish_empty(held, end)
        else:
            await self._finish_recorded(held, end, capture.messages)

    async def _write(self, held: _Held, event: ServerEvent) -> None:
        """Append one of the turn's events, unless the turn is no longer this worker's or is finished."""
        if held.lost:
            return
        turn = held.turn
        added = await self._append(
            keys=[self._keys.done(turn.session_id), self._keys.turns, self._keys.events(turn.session_id)],
            args=[turn.seq, WORKERS_GROUP, turn.entry_id, self.consumer, self._log_size, serialize_event(event)],
        )
        if added is None:
            await self._lose(held)

    async def _finish_empty(self, held: _Held, end: TurnEndEvent) -> None:
        if held.lost:
            return
        turn, keys = held.turn, self._keys
        outcome = await self._finish(
            keys=[
                keys.done(turn.session_id),
                self._store.keys.turn_ids(turn.session_id),
                keys.events(turn.session_id),
                keys.open_turns(turn.session_id),
                keys.started(turn.turn_id),
                keys.cancelled(turn.turn_id),
                keys.turns,
                keys.control,
            ],
            args=[
                turn.seq,
                turn.turn_id,
                serialize_event(end),
                self._log_size,
                WORKERS_GROUP,
                turn.entry_id,
                self.consumer,
                ControlMessage(turn.session_id, "done").encode(),
            ],
        )
        if int(outcome) < 0:
            await self._lose(held)

    async def _finish_recorded(self, held: _Held, end: TurnEndEvent, messages: tuple[ChatMessage, ...]) -> None:
        turn, keys = held.turn, self._keys
        if held.lost:
            return
        done = int(await self._redis.get(keys.done(turn.session_id)) or 0)
        if done >= turn.seq:
            await self._drop_entry(turn.entry_id)
            return
        line = serialize_event(end)

        def also(pipe: Pipeline) -> None:
            pipe.xadd(keys.events(turn.session_id), {EVENT_FIELD: line}, maxlen=self._log_size, approximate=True)
            pipe.set(keys.done(turn.session_id), turn.seq)
            pipe.hdel(keys.open_turns(turn.session_id), turn.turn_id)
            pipe.delete(keys.started(turn.turn_id), keys.cancelled(turn.turn_id))
            pipe.xack(keys.turns, WORKERS_GROUP, turn.entry_id)
            pipe.xdel(keys.turns, turn.entry_id)
            pipe.publish(keys.control, ControlMessage(turn.session_id, "done").encode())

        try:
            appended = await self._store.append_turn_once(turn.session_id, turn.turn_id, messages, also=also)
        except SessionNotFoundError:  # deleted while the turn ran: end it without history
            await self._finish_empty(held, end)
            return
        if not appended:
            await self._drop_entry(turn.entry_id)

    # --- control channel ---------------------------------------------------------------------------------------------

    async def _listen(self, pubsub: object) -> None:
        while True:
            try:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)  # type: ignore[attr-defined]
            except (RedisError, OSError):
                log.warning("the control channel failed; listening again", exc_info=True)
                await asyncio.sleep(1.0)
                continue
            if message is None or message.get("type") != "message":
                continue
            control = ControlMessage.decode(message["data"])
            if control is not None:
                await self._on_control(control, time.monotonic())

    async def _on_control(self, control: ControlMessage, received_at: float) -> None:
        if control.kind == "done":
            if (wakeup := self._wakeups.pop(control.session_id, None)) is not None:
                wakeup.set()
            return
        for held in list(self._held.values()):
            if held.turn.session_id != control.session_id:
                continue
            if control.kind == "cancel" and control.turn_id == held.turn.turn_id:
                held.cancel_asked = True
                if held.session is not None:
                    await held.session.handle(CancelRequest())
            elif control.kind == "answer" and held.running and control.line is not None:
                try:
                    answer = parse_request(control.line)
                except UnreadableLineError:
                    continue
                if not isinstance(answer, HitlResponseRequest):
                    continue
                if held.session is not None:
                    await held.session.handle(answer, received_at=received_at)
                else:
                    held.pending_answers.append((answer, received_at))
