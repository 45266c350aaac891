"""The HTTP API of ``ironhive serve`` (aiohttp): sessions, messages, SSE events, approvals, cancels and ``/healthz``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ironhive.adapters.serve.hub import EventLog, LoggedEvent, TurnHub, TurnQueueFullError
from ironhive.domain.errors import IronHiveError, SessionNotFoundError
from ironhive.domain.sessions import session_id_problem
from ironhive.ports.sessions import SessionInfo, SessionStore
from ironhive.protocol.models import (
    DEFAULT_PROTOCOL,
    HitlResponseRequest,
    UnreadableLineError,
    UserMessageRequest,
)
from ironhive.serve.security import error_response, middlewares, retry_after

logger = logging.getLogger(__name__)

DEFAULT_LIST_LIMIT = 50
MAX_LIST_LIMIT = 1000
HEALTH_LAG_LIMIT_MS = 500.0
"""``/healthz`` answers 503 when the event loop lags more than this."""
_MONITOR_INTERVAL = 0.25


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiSettings:
    """What the API needs besides its backend.

    Attributes:
        model: The model new sessions record (the selected provider's).
        token: The bearer token.
        hosts: The ``Host`` values answered (``None``: any, on a wildcard bind).
        origins: ``server.allowedOrigins``.
        max_request_bytes: ``server.maxRequestBytes``.
        heartbeat_seconds: ``server.heartbeatSeconds``.
    """

    model: str
    token: str
    hosts: frozenset[str] | None
    origins: tuple[str, ...]
    max_request_bytes: int
    heartbeat_seconds: float


@dataclass(kw_only=True, slots=True)
class _State:
    store: SessionStore
    log: EventLog
    hub: TurnHub
    settings: ApiSettings
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    lag_seconds: float = 0.0
    monitor: asyncio.Task[None] | None = None


class _ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


_STATE: web.AppKey[_State] = web.AppKey("state", _State)
_Route = Callable[[_State, web.Request], Awaitable[web.StreamResponse]]


def build_app(store: SessionStore, log: EventLog, hub: TurnHub, settings: ApiSettings) -> web.Application:
    """The API over a backend. When the app shuts down, the hub stops (running turns end) and event streams close."""
    app = web.Application(
        middlewares=middlewares(
            token=settings.token,
            hosts=settings.hosts,
            origins=settings.origins,
            max_request_bytes=settings.max_request_bytes,
        ),
        client_max_size=settings.max_request_bytes,
    )
    state = _State(store=store, log=log, hub=hub, settings=settings)
    app[_STATE] = state

    def route(handler: _Route) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            try:
                return await handler(state, request)
            except _ApiError as error:
                return error_response(error.status, error.message)
            except SessionNotFoundError:
                return error_response(404, f"No session {request.match_info.get('id', '')!r}")

        return handle

    app.router.add_get("/healthz", route(_health))
    app.router.add_post("/v1/sessions", route(_open_session))
    app.router.add_get("/v1/sessions", route(_list_sessions))
    app.router.add_get("/v1/sessions/{id}", route(_get_session))
    app.router.add_delete("/v1/sessions/{id}", route(_delete_session))
    app.router.add_post("/v1/sessions/{id}/messages", route(_post_message))
    app.router.add_get("/v1/sessions/{id}/events", route(_events))
    app.router.add_post("/v1/sessions/{id}/approvals", route(_post_approval))
    app.router.add_post("/v1/sessions/{id}/cancel", route(_post_cancel))
    app.on_startup.append(_start_monitor)
    app.on_shutdown.append(_shut_down)
    return app


# -- sessions ----------------------------------------------------------------------------------------------------------


def session_entry(info: SessionInfo) -> dict[str, Any]:
    """A session's listing entry as the API writes it."""
    return {
        "id": info.id,
        "status": info.status,
        "model": info.model,
        "created": info.created.isoformat(),
        "updated": info.updated.isoformat(),
        "message_count": info.message_count,
        "first_message": info.first_message,
        "forked_from": info.forked_from,
    }


async def _open_session(state: _State, request: web.Request) -> web.StreamResponse:
    body = await _json_body(request, optional=True)
    session_id = body.get("id")
    if session_id is not None:
        problem = session_id_problem(session_id, name="id") if isinstance(session_id, str) else None
        if not isinstance(session_id, str) or problem:
            raise _ApiError(422, problem or "id must be a string")
        with contextlib.suppress(SessionNotFoundError):
            return web.json_response(session_entry(await state.store.get(session_id)), status=200)
    try:
        info = await state.store.create(state.settings.model, session_id)
    except IronHiveError:
        if session_id is None:
            raise
        info = await state.store.get(session_id)  # created by another request at the same moment
        return web.json_response(session_entry(info), status=200)
    return web.json_response(session_entry(info), status=201)


async def _list_sessions(state: _State, request: web.Request) -> web.StreamResponse:
    raw = request.query.get("limit", str(DEFAULT_LIST_LIMIT))
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise _ApiError(400, f"limit must be a whole number from 1 to {MAX_LIST_LIMIT}")
    sessions = await state.store.list(limit)
    return web.json_response({"sessions": [session_entry(info) for info in sessions]})


async def _get_session(state: _State, request: web.Request) -> web.StreamResponse:
    return web.json_response(session_entry(await _existing(state, request)))


async def _delete_session(state: _State, request: web.Request) -> web.StreamResponse:
    info = await _existing(state, request)
    await state.hub.drop(info.id)
    await state.log.forget(info.id)
    await state.store.delete(info.id)
    return web.json_response({"id": info.id, "deleted": True})


# -- turns -------------------------------------------------------------------------------------------------------------


async def _post_message(state: _State, request: web.Request) -> web.StreamResponse:
    info = await _existing(state, request)
    message = _protocol_body(await _json_body(request), "user_message")
    assert isinstance(message, UserMessageRequest)
    try:
        turn_id = await state.hub.submit(info.id, message)
    except TurnQueueFullError as error:
        response = error_response(429, str(error))
        response.headers["Retry-After"] = retry_after(error.retry_after_seconds)
        return response
    return web.json_response({"turn_id": turn_id}, status=202)


async def _post_approval(state: _State, request: web.Request) -> web.StreamResponse:
    info = await _existing(state, request)
    response = _protocol_body(await _json_body(request), "hitl_response")
    assert isinstance(response, HitlResponseRequest)
    refused = await state.hub.answer(info.id, response)
    if refused is not None:
        raise _ApiError(409, refused)
    return web.json_response({"accepted": True})


async def _post_cancel(state: _State, request: web.Request) -> web.StreamResponse:
    info = await _existing(state, request)
    body = await _json_body(request, optional=True)
    turn_id = body.get("turn_id")
    if turn_id is not None and not isinstance(turn_id, str):
        raise _ApiError(422, "turn_id must be a string")
    if not await state.hub.cancel(info.id, turn_id):
        raise _ApiError(404, "No such turn running or queued" if turn_id else "No turn running")
    return web.json_response({"cancelled": True})


# -- events ------------------------------------------------------------------------------------------------------------


def event_type(line: str) -> str:
    """The ``type`` of a protocol line (written first, so read without parsing the whole line)."""
    prefix = '{"type":"'
    if line.startswith(prefix):
        end = line.find('"', len(prefix))
        if end > 0 and "\\" not in line[len(prefix) : end]:
            return line[len(prefix) : end]
    value = json.loads(line)
    return str(value.get("type", "message")) if isinstance(value, dict) else "message"


def sse_frame(event_id: str, line: str) -> bytes:
    """One SSE event: ``id:`` the log id, ``event:`` the protocol type, ``data:`` exactly the protocol line."""
    name = event_type(line)
    if any(character in name for character in "\r\n"):  # a line break would end the field early
        name = "message"
    return f"id: {event_id}\nevent: {name}\ndata: {line}\n\n".encode()


async def _events(state: _State, request: web.Request) -> web.StreamResponse:
    info = await _existing(state, request)
    after = request.headers.get("Last-Event-ID") or request.query.get("after") or None
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )
    await response.prepare(request)
    stopping = asyncio.ensure_future(state.stopping.wait())
    reading: asyncio.Future[Sequence[LoggedEvent]] | None = None
    try:
        with contextlib.suppress(ConnectionError):
            while True:
                if stopping.done():  # the turns were stopped: send what they wrote last, then end the stream
                    for event in await state.log.read_after(info.id, after, wait_seconds=0):
                        await response.write(sse_frame(event.id, event.line))
                    break
                reading = asyncio.ensure_future(
                    state.log.read_after(info.id, after, wait_seconds=state.settings.heartbeat_seconds)
                )
                await asyncio.wait((reading, stopping), return_when=asyncio.FIRST_COMPLETED)
                if not reading.done():
                    reading.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reading
                    continue
                events = reading.result()
                if not events:
                    try:
                        await state.store.get(info.id)
                    except SessionNotFoundError:
                        break  # deleted meanwhile (here or by another front): nothing more will come
                    await response.write(b": heartbeat\n\n")
                    continue
                await response.write(b"".join(sse_frame(event.id, event.line) for event in events))
                after = events[-1].id
    finally:
        stopping.cancel()
        if reading is not None:
            reading.cancel()  # the request was cancelled while a read waited
    return response


# -- health and lifecycle ----------------------------------------------------------------------------------------------


async def _health(state: _State, request: web.Request) -> web.StreamResponse:
    loop = asyncio.get_running_loop()
    scheduled = loop.time()
    ran: asyncio.Future[float] = loop.create_future()

    def mark() -> None:
        if not ran.done():
            ran.set_result(loop.time())

    loop.call_soon(mark)
    now_lag = await ran - scheduled
    lag_ms = round(max(state.lag_seconds, now_lag) * 1000, 1)
    load = await state.hub.load()
    healthy = lag_ms <= HEALTH_LAG_LIMIT_MS
    body = {
        "status": "ok" if healthy else "lagging",
        "loop_lag_ms": lag_ms,
        "running": load.running,
        "queued": load.queued,
    }
    return web.json_response(body, status=200 if healthy else 503)


async def _start_monitor(app: web.Application) -> None:
    state = app[_STATE]

    async def monitor() -> None:
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(_MONITOR_INTERVAL)
            state.lag_seconds = max(0.0, loop.time() - start - _MONITOR_INTERVAL)

    state.monitor = asyncio.create_task(monitor(), name="ironhive-serve-loop-monitor")


async def _shut_down(app: web.Application) -> None:
    """Running turns are cancelled (each ends with its ``turn_end``), then the event streams send it and close."""
    state = app[_STATE]
    try:
        await state.hub.aclose()
    finally:
        state.stopping.set()
        if state.monitor is not None:
            state.monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await state.monitor


# -- bodies ------------------------------------------------------------------------------------------------------------


async def _existing(state: _State, request: web.Request) -> SessionInfo:
    session_id = request.match_info["id"]
    if session_id_problem(session_id) is not None:
        raise SessionNotFoundError(session_id)
    return await state.store.get(session_id)


def _no_constants(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


async def _json_body(request: web.Request, *, optional: bool = False) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty optional body). Raises 400 for anything else."""
    data = await request.read()
    if not data.strip():
        if optional:
            return {}
        raise _ApiError(400, "The request needs a JSON object body")
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constants)
    except UnicodeDecodeError:
        raise _ApiError(400, "The body is not UTF-8 text") from None
    except (ValueError, RecursionError) as error:
        raise _ApiError(400, f"Malformed JSON: {str(error)[:200]}") from None
    if not isinstance(value, dict):
        raise _ApiError(400, "The body must be a JSON object")
    return value


def _protocol_body(value: Mapping[str, Any], request_type: str) -> object:
    """A protocol request of ``request_type`` from a JSON object (``type`` optional). Raises 422 when it is not one."""
    if value.get("type", request_type) != request_type:
        raise _ApiError(422, f'This route takes a {request_type} ("type" may be left out)')
    line = json.dumps({**value, "type": request_type}, ensure_ascii=False)
    try:
        return DEFAULT_PROTOCOL.with_max_line_bytes(len(line.encode("utf-8")) + 1).parse_request(line)
    except UnreadableLineError as error:
        raise _ApiError(422, str(error)) from None
