"""LoopbackAgentHost: a 127.0.0.1 aiohttp server implementing the agent host endpoints (ready, SSE inbox, events)."""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, TypeAlias

from aiohttp import web

from ironhive.protocol.models import DEFAULT_PROTOCOL, ServerRequest, UnreadableLineError
from tests.support.loopback_server import start_site

Json: TypeAlias = dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Frame:
    event_id: str | None
    text: str


@dataclass(frozen=True, slots=True)
class EventPost:
    """One POST to ``/events`` as the host received it (accepted or failed on purpose)."""

    body: str
    status: int
    at: float


@dataclass
class AgentRecord:
    """What the host saw of one agent id, and how it is told to misbehave.

    Attributes:
        ready_bodies: The JSON body of every ``ready`` call.
        inbox_last_event_ids: The ``Last-Event-ID`` header of every inbox connection (None when absent).
        event_posts: Every ``/events`` POST, failed ones included.
        bodies: The parsed bodies of the accepted POSTs (an object, or a list for a batch).
        events: The accepted events, batches flattened, in order.
    """

    ready_bodies: list[Json] = field(default_factory=list)
    inbox_last_event_ids: list[str | None] = field(default_factory=list)
    event_posts: list[EventPost] = field(default_factory=list)
    bodies: list[Any] = field(default_factory=list)
    events: list[Json] = field(default_factory=list)
    frames: list[_Frame] = field(default_factory=list)
    next_unsent: int = 0
    next_id: int = 1
    generation: int = 0
    abrupt_drop: bool = False
    ready_status: int | None = None
    inbox_refusals: deque[int] = field(default_factory=deque)
    inbox_status: int | None = None
    end_streams_at_once: bool = False
    event_failures: deque[tuple[int, Mapping[str, str]]] = field(default_factory=deque)
    open_streams: int = 0

    @property
    def event_types(self) -> list[str]:
        """The ``type`` of every accepted event, in order."""
        return [event["type"] for event in self.events]


class LoopbackAgentHost:
    """An agent host for tests: ``ready``, an SSE inbox fed by :meth:`send`, and an event collector.

    Serves any agent id (records are created on first use). Use it as an async context manager in the test's loop.
    Events posted are validated with the protocol; an invalid one is answered with 400 and not collected.
    """

    def __init__(self) -> None:
        self._agents: dict[str, AgentRecord] = {}
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._closing = False

    async def __aenter__(self) -> LoopbackAgentHost:
        app = web.Application()
        app.router.add_post("/api/agent/{agent_id}/ready", self._ready)
        app.router.add_get("/api/agent/{agent_id}/inbox", self._inbox)
        app.router.add_post("/api/agent/{agent_id}/events", self._events)
        self._runner, self._port = await start_site(app, shutdown_timeout=1.0)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing = True
        await self._notify()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def agent_ids(self) -> list[str]:
        """The ids of the agents the host has records of, in first-seen order."""
        return list(self._agents)

    def agent(self, agent_id: str) -> AgentRecord:
        """The record of ``agent_id`` (created empty on first use)."""
        return self._agents.setdefault(agent_id, AgentRecord())

    # --- driving the inbox -------------------------------------------------------------------------------------------

    async def send(self, agent_id: str, request: ServerRequest | Mapping[str, Any] | str) -> str:
        """Queue a request on the agent's inbox as one SSE event with the next id; returns that id."""
        if isinstance(request, ServerRequest):
            text = DEFAULT_PROTOCOL.serialize_request(request)
        elif isinstance(request, str):
            text = request
        else:
            text = json.dumps(request)
        record = self.agent(agent_id)
        event_id = str(record.next_id)
        record.next_id += 1
        data = "".join(f"data: {line}\n" for line in text.split("\n"))
        record.frames.append(_Frame(event_id, f"id: {event_id}\n{data}\n"))
        await self._notify()
        return event_id

    async def send_raw(self, agent_id: str, text: str) -> None:
        """Queue raw event-stream text (comments, ``retry:``, broken data ...) exactly as given."""
        self.agent(agent_id).frames.append(_Frame(None, text))
        await self._notify()

    async def drop_inbox(self, agent_id: str, *, refuse: int = 0, status: int = 503, abrupt: bool = False) -> None:
        """End the agent's open inbox streams (a host restart); the next ``refuse`` connections get ``status``.

        ``abrupt`` closes the TCP connection instead of ending the stream cleanly.
        """
        record = self.agent(agent_id)
        record.inbox_refusals.extend([status] * refuse)
        record.abrupt_drop = abrupt
        record.generation += 1
        await self._notify()

    def refuse_inbox(self, agent_id: str, status: int | None) -> None:
        """Answer every inbox connection with ``status`` (None: serve again)."""
        self.agent(agent_id).inbox_status = status

    def end_streams_at_once(self, agent_id: str, value: bool = True) -> None:
        """Accept inbox connections but end each stream right after sending what is queued."""
        self.agent(agent_id).end_streams_at_once = value

    def fail_ready(self, agent_id: str, status: int) -> None:
        """Answer the agent's ``ready`` with ``status``."""
        self.agent(agent_id).ready_status = status

    def fail_events(
        self, agent_id: str, count: int, status: int = 503, headers: Mapping[str, str] | None = None
    ) -> None:
        """Answer the next ``count`` event POSTs with ``status`` (and ``headers``) without collecting them."""
        self.agent(agent_id).event_failures.extend([(status, dict(headers or {}))] * count)

    # --- waiting -----------------------------------------------------------------------------------------------------

    async def wait_until(self, predicate: Callable[[], bool], within: float = 5.0) -> None:
        """Wait until ``predicate()`` holds (checked on every change the host sees)."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(predicate)

    async def wait_for_events(
        self, agent_id: str, predicate: Callable[[list[Json]], bool], within: float = 5.0
    ) -> list[Json]:
        """Wait until ``predicate(events)`` holds for the agent's collected events; returns them."""
        record = self.agent(agent_id)
        await self.wait_until(lambda: predicate(record.events), within)
        return record.events

    async def wait_for_turn_ends(self, agent_id: str, count: int, within: float = 5.0) -> list[Json]:
        """Wait until ``count`` ``turn_end`` events were collected; returns all events."""
        return await self.wait_for_events(
            agent_id, lambda events: sum(e["type"] == "turn_end" for e in events) >= count, within
        )

    # --- handlers ----------------------------------------------------------------------------------------------------

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _ready(self, request: web.Request) -> web.Response:
        record = self.agent(request.match_info["agent_id"])
        record.ready_bodies.append(await request.json())
        await self._notify()
        if record.ready_status is not None:
            return web.json_response({"error": "not ready"}, status=record.ready_status)
        return web.json_response({"ok": True})

    async def _inbox(self, request: web.Request) -> web.StreamResponse:
        record = self.agent(request.match_info["agent_id"])
        last_id = request.headers.get("Last-Event-ID")
        record.inbox_last_event_ids.append(last_id)
        await self._notify()
        if record.inbox_refusals or record.inbox_status is not None:
            status = record.inbox_refusals.popleft() if record.inbox_refusals else record.inbox_status
            assert status is not None
            return web.Response(status=status, text="refused")
        position = record.next_unsent
        if last_id is not None:  # replay what came after the last event the agent saw
            ids = [frame.event_id for frame in record.frames]
            if last_id in ids:
                position = ids.index(last_id) + 1
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        generation = record.generation
        record.open_streams += 1
        try:
            while True:
                if position < len(record.frames):
                    frames = record.frames[position:]
                    position = len(record.frames)
                    record.next_unsent = max(record.next_unsent, position)
                    await response.write("".join(frame.text for frame in frames).encode())
                    continue
                if record.end_streams_at_once:
                    break
                async with self._changed:
                    await self._changed.wait_for(functools.partial(self._stream_wakes, record, generation, position))
                if self._closing or record.generation != generation:
                    break
        except ConnectionError:
            return response
        finally:
            record.open_streams -= 1
            await self._notify()
        if record.abrupt_drop and not self._closing and request.transport is not None:
            request.transport.close()
            return response
        await response.write_eof()
        return response

    def _stream_wakes(self, record: AgentRecord, generation: int, position: int) -> bool:
        return self._closing or record.generation != generation or position < len(record.frames)

    async def _events(self, request: web.Request) -> web.Response:
        record = self.agent(request.match_info["agent_id"])
        text = await request.text()
        if record.event_failures:
            status, headers = record.event_failures.popleft()
            record.event_posts.append(EventPost(text, status, time.monotonic()))
            await self._notify()
            return web.Response(status=status, headers=headers, text="failing on purpose")
        try:
            body = json.loads(text)
            items = body if isinstance(body, list) else [body]
            for item in items:
                DEFAULT_PROTOCOL.parse_event(json.dumps(item))
        except (ValueError, UnreadableLineError) as error:
            record.event_posts.append(EventPost(text, 400, time.monotonic()))
            await self._notify()
            return web.Response(status=400, text=str(error))
        record.event_posts.append(EventPost(text, 204, time.monotonic()))
        record.bodies.append(body)
        record.events.extend(items)
        await self._notify()
        return web.Response(status=204)
