"""AgentHttpRunner: the turn-stream protocol over HTTP — requests from a host's SSE inbox, events POSTed back."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import random
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable, Coroutine
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
import httpx2
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type

from ironhive.adapters.retry_after import retry_after_for_status
from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.adapters.server.turns import ProcessMessage, TurnSession, refuse_unreadable
from ironhive.domain.errors import IronHiveError
from ironhive.domain.failover import RetryPolicy
from ironhive.protocol.models import (
    DEFAULT_PROTOCOL,
    CancelRequest,
    ContextUpdateRequest,
    ProtocolRegistry,
    ServerEvent,
    UnreadableLineError,
    UserMessageRequest,
)

log = logging.getLogger(__name__)

MAX_BATCH_EVENTS = 256
"""Most events one ``/events`` POST may carry when batching is asked for (``max_batch_events``)."""

RETRY_AFTER_CAP_SECONDS = 300.0
"""Longest wait a host's ``Retry-After`` can impose (a guard against absurd values)."""

RETRY_JITTER = 0.5
"""Share of each reconnect/retry backoff that is random, so agents that lost a host together do not return together."""

_POST_TIMEOUT = aiohttp.ClientTimeout(total=60, sock_connect=10)
# The inbox is a long-lived stream that may be quiet for as long as nobody types: no read timeout.
_STREAM_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=None)
_NETWORK_ERRORS = (aiohttp.ClientError, TimeoutError, OSError)
# An inbox event over the protocol's line limit is answered as unreadable and reading goes on; one this many times over
# it ends the inbox (the decoder keeps no more of it in memory, and cannot find the next event past it).
_EVENT_LIMIT_FACTOR = 4


class HostConnectionError(IronHiveError):
    """The agent host refused the agent or could not be reached for good; the runner stops.

    Attributes:
        status: The HTTP status the host answered, when there was one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


async def decode_event_stream(
    chunks: AsyncIterable[bytes], *, url: str, max_event_bytes: int | None = None
) -> AsyncGenerator[httpx2.ServerSentEvent, None]:
    """The events of a ``text/event-stream`` body, decoded by httpx2's SSE decoder (derived from httpx-sse).

    It follows the WHATWG event-stream rules: lines end with CRLF, LF or CR (also when split across chunks), a leading
    BOM is dropped, ``:`` comments are ignored, ``data`` lines are joined with ``\\n``, the last ``id`` persists from
    event to event (one holding NUL is ignored) and a block the stream cuts off before its blank line is never
    dispatched. The body is read as UTF-8 with replacement, whatever its ``Content-Type`` says.

    Args:
        chunks: The body as it arrives (e.g. an aiohttp response's ``content.iter_any()``).
        url: Where the body comes from (named by the decoder's errors).
        max_event_bytes: The most bytes one event may hold; None for no limit.

    Raises:
        httpx2.SSEError: An event grew past ``max_event_bytes`` (raised while iterating).
    """
    response = httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=chunks,
        request=httpx2.Request("GET", url),
        default_encoding="utf-8-sig",  # the event stream's encoding, its one optional BOM dropped
    )
    events = aiter(httpx2.EventSource(response, max_event_size=max_event_bytes))
    try:
        async for event in events:
            yield event
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


class _Transient(Exception):
    """A failure worth retrying (network, 408, 429, 5xx, or an inbox stream that ended)."""

    def __init__(self, reason: str, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.status = status


def is_transient(status: int | None) -> bool:
    """Whether a failure is worth retrying: no status (network), 408, 429 or any 5xx."""
    return status is None or status in (408, 429) or status >= 500


def _retrying(
    policy: Callable[[], RetryPolicy],
    failures: Callable[[RetryCallState], int],
    on_retry: Callable[[_Transient, int, float], None],
) -> AsyncRetrying:
    """Retries of a ``_Transient`` failure, waits and limit from the policy; other errors pass at once.

    Args:
        policy: The backoff rule in force (read at each failure: the host may change the inbox's).
        failures: The consecutive failures so far, from the attempt state (an inbox that made progress restarts it).
        on_retry: Told the failure, its number and the wait before each retry.
    """

    def wait(state: RetryCallState) -> float:
        failure = _failure(state)
        return policy().delay(failures(state), failure.retry_after, draw=random.random())

    def before_sleep(state: RetryCallState) -> None:
        on_retry(_failure(state), failures(state), state.upcoming_sleep)

    return AsyncRetrying(
        retry=retry_if_exception_type(_Transient),
        stop=lambda state: policy().gives_up(failures(state)),
        wait=wait,
        before_sleep=before_sleep,
        sleep=asyncio.sleep,
        reraise=True,
    )


def _failure(state: RetryCallState) -> _Transient:
    error = state.outcome.exception() if state.outcome is not None else None
    if not isinstance(error, _Transient):  # pragma: no cover - tenacity retries only _Transient
        raise RuntimeError("a retry without a transient failure")
    return error


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class AgentHttpRunner:
    """Serves the turn-stream protocol to an agent host over HTTP.

    Announces itself with ``POST {host}/api/agent/{id}/ready``, reads requests from the SSE stream
    ``GET {host}/api/agent/{id}/inbox`` and delivers events with ``POST {host}/api/agent/{id}/events``. Requests are
    dispatched as they arrive (turns run one at a time, in order; see :class:`TurnSession`); ``shutdown`` stops the
    reading, the turns already received finish (approval requests are rejected from then on, as nobody can answer them
    any more) and :meth:`run` returns once every event is delivered. ``ready`` is sent once: a non-2xx answer or an
    unreachable host fails the runner at once.

    Inbox: when the stream ends without ``shutdown`` or fails transiently (network error, 408, 429, 5xx) the runner
    reconnects after ``initial_backoff`` seconds, doubling up to ``max_backoff``, each wait shortened at random by up
    to :data:`RETRY_JITTER` of itself (a ``retry:`` field from the host replaces the starting delay; a ``Retry-After``
    on 429/503 replaces one wait), sending ``Last-Event-ID``. Turns go on and their events queue while it is down. More
    than ``max_reconnect_attempts`` consecutive failures (the count restarts whenever a request arrives) or any other
    4xx fail the runner. The stream is decoded by :func:`decode_event_stream`. SSE ``event:`` names are ignored (every
    event's data is one request, as the original runner read them); an unreadable or overlong request is answered
    with an ``error`` event and reading goes on, but an event over four times the protocol's line limit ends the
    runner (it is not kept in memory, so the stream cannot be read past it).

    Events: one sender posts them in order, one event object per POST as the original runner did. A host that reads
    arrays may ask for batches (``max_batch_events`` > 1): several queued events then go as one JSON array. Transient
    failures retry the same body with the doubling backoff (or the host's ``Retry-After``); delivery is at-least-once
    (a POST that timed out after the host took it is sent again). More than ``max_reconnect_attempts`` consecutive
    failures of one batch fail the runner. A batch the host refuses with another
    4xx is resent event by event, and an event refused on its own is logged and dropped: resending what the host calls
    malformed cannot succeed, and holding it would block every later event.

    When the runner fails (or :meth:`run` is cancelled) the running turn is cancelled, queued turns are dropped, the
    approval bridge is detached (pending approvals end) and undelivered events are logged as lost.

    Args:
        host_url: The host's base URL (``http://`` or ``https://``), e.g. ``http://127.0.0.1:5100``.
        session_id: This agent's id in the host's URLs.
        process_message: The processor of user messages (the same signature as the stdio runner's).
        hitl_bridge: Approvals over the wire; attached while the runner runs.
        protocol: The request and event types (extend it with ``with_request``/``with_event``).
        max_reconnect_attempts: Consecutive failed reconnects (or event deliveries) tolerated; None retries forever.
        initial_backoff: First reconnect/retry delay in seconds.
        max_backoff: Longest reconnect/retry delay in seconds.
        session: An aiohttp session to use (left open); by default the runner opens and closes its own.
        on_context_update: Called for every ``context_update``.
        skip_context_enrichment: Do not prefix messages with the client's working path.
        max_batch_events: Most events one POST carries: 1 (the default) posts each event as its own object; up to
            :data:`MAX_BATCH_EVENTS` posts the events waiting together as one JSON array (only for a host that reads
            arrays).

    Raises:
        ValueError: A malformed URL, an empty session id, a negative/zero delay or a batch size out of range.
    """

    def __init__(
        self,
        host_url: str,
        session_id: str,
        process_message: ProcessMessage,
        *,
        hitl_bridge: HitlBridge | None = None,
        protocol: ProtocolRegistry = DEFAULT_PROTOCOL,
        max_reconnect_attempts: int | None = 10,
        initial_backoff: float = 1.0,
        max_backoff: float = 30.0,
        session: aiohttp.ClientSession | None = None,
        on_context_update: Callable[[ContextUpdateRequest], None] | None = None,
        skip_context_enrichment: bool = False,
        max_batch_events: int = 1,
    ) -> None:
        parts = urlsplit(host_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"host_url must be an http(s) URL, got {host_url!r}")
        if not session_id:
            raise ValueError("session_id must not be empty")
        if max_reconnect_attempts is not None and max_reconnect_attempts < 0:
            raise ValueError("max_reconnect_attempts must be None or at least 0")
        if not 0 < initial_backoff <= max_backoff:
            raise ValueError("backoffs must satisfy 0 < initial_backoff <= max_backoff")
        if not 1 <= max_batch_events <= MAX_BATCH_EVENTS:
            raise ValueError(f"max_batch_events must be between 1 and {MAX_BATCH_EVENTS}")
        self._batch = max_batch_events
        self._base = f"{host_url.rstrip('/')}/api/agent/{quote(session_id, safe='')}"
        self._session_id = session_id
        self._process = process_message
        self._bridge = hitl_bridge
        self._protocol = protocol
        self._max_attempts = max_reconnect_attempts
        self._delivery_policy = RetryPolicy(
            max_retries=max_reconnect_attempts,
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            max_retry_after=RETRY_AFTER_CAP_SECONDS,
            jitter=RETRY_JITTER,
        )
        self._inbox_policy = self._delivery_policy  # its first delay follows the host's ``retry:`` field
        self._http = session
        self._on_context_update = on_context_update
        self._skip_enrichment = skip_context_enrichment
        self._outbox: deque[tuple[str, str]] = deque()  # (event type, serialized event)
        self._outbox_changed = asyncio.Event()
        self._closing = False  # no more events will come: the sender returns once the outbox is empty
        self._aborted = False
        self._stopped = False
        self._started = False
        self._last_event_id = ""
        self._inbox_progress = False

    @property
    def last_event_id(self) -> str:
        """The id of the last inbox event seen ("" before any), sent as ``Last-Event-ID`` on reconnect."""
        return self._last_event_id

    async def publish_event(self, event: ServerEvent) -> None:
        """Queue an out-of-band event (e.g. a provider fallback notice), delivered in order with the others.

        Events published before :meth:`run` are delivered right after ``ready``.

        Raises:
            ValueError: The event's type is not registered in the runner's protocol.
            RuntimeError: The runner has stopped.
        """
        if self._stopped or self._closing:
            raise RuntimeError("the HTTP runner has stopped; the event cannot be delivered")
        await self._enqueue(event)

    async def run(self) -> None:
        """Serve until ``shutdown``, finish the received turns and deliver every event.

        Raises:
            HostConnectionError: ``ready`` failed, the host refused the inbox, or reconnects/deliveries ran out.
            RuntimeError: ``run`` was already called.
        """
        if self._started:
            raise RuntimeError("AgentHttpRunner.run() can be called only once")
        self._started = True
        http = self._http if self._http is not None else aiohttp.ClientSession()
        try:
            await self._announce(http)
            await self._serve(http)
        finally:
            self._stopped = True
            if self._outbox:
                log.error("%d event(s) of session %s were not delivered", len(self._outbox), self._session_id)
                self._outbox.clear()
            if self._http is None:
                await http.close()

    # --- sequencing --------------------------------------------------------------------------------------------------

    async def _serve(self, http: aiohttp.ClientSession) -> None:
        session = TurnSession(
            self._guarded_process,
            self._enqueue,
            hitl_bridge=self._bridge,
            on_context_update=self._on_context_update,
            skip_context_enrichment=self._skip_enrichment,
        )
        sender = asyncio.create_task(self._send_events(http), name=f"ironhive-http-events-{self._session_id}")
        try:
            async with session:
                try:
                    await self._until_done(self._read_inbox(http, session), sender, "inbox")
                    # The reader returns only after ``shutdown`` (which closed the session). Nobody reads the inbox
                    # any more, so approvals cannot be answered: reject them now rather than at their timeout.
                    session.connection_lost()
                    await self._until_done(session.wait_closed(), sender, "turns")
                except BaseException:
                    await self._abort(session)
                    raise
            self._closing = True
            self._outbox_changed.set()
            await sender
        finally:
            await _cancel(sender)

    async def _until_done(self, work: Coroutine[Any, Any, None], sender: asyncio.Task[None], name: str) -> None:
        """Run ``work`` to its end unless the sender fails first (then raise the sender's error)."""
        task = asyncio.create_task(work, name=f"ironhive-http-{name}-{self._session_id}")
        try:
            await asyncio.wait({task, sender}, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                task.result()
                return
            sender.result()  # the sender only ends early by failing
            raise RuntimeError("the event sender stopped unexpectedly")  # pragma: no cover
        finally:
            await _cancel(task)

    async def _abort(self, session: TurnSession) -> None:
        self._aborted = True
        session.connection_lost()
        await session.handle(CancelRequest())  # queued turns then end at once: _guarded_process yields nothing

    async def _guarded_process(self, request: UserMessageRequest) -> AsyncIterator[ServerEvent]:
        if self._aborted:
            return
        async for event in self._process(request):
            yield event

    # --- ready and inbox ---------------------------------------------------------------------------------------------

    async def _announce(self, http: aiohttp.ClientSession) -> None:
        body = json.dumps({"session_id": self._session_id}, separators=(",", ":"))
        url = f"{self._base}/ready"
        try:
            async with http.post(
                url, data=body.encode(), headers={"Content-Type": "application/json"}, timeout=_POST_TIMEOUT
            ) as response:
                if not 200 <= response.status < 300:
                    raise HostConnectionError(
                        f"The host answered HTTP {response.status} to ready for session {self._session_id}",
                        status=response.status,
                    )
        except _NETWORK_ERRORS as error:
            raise HostConnectionError(f"Cannot reach the host at {url}: {_describe(error)}") from error
        log.info("Session %s is ready at %s", self._session_id, self._base)

    async def _read_inbox(self, http: aiohttp.ClientSession, session: TurnSession) -> None:
        streak_start = 0  # the attempt after which the current run of consecutive failures began

        def failures(state: RetryCallState) -> int:
            return state.attempt_number - streak_start

        def announce(failure: _Transient, number: int, delay: float) -> None:
            log.warning(
                "Inbox of session %s lost (%s); reconnect attempt %d in %.2fs",
                self._session_id,
                failure.reason,
                number,
                delay,
            )

        # The policy is read at each wait: a ``retry:`` field of the host changes it while the stream runs.
        retrying = _retrying(lambda: self._inbox_policy, failures, announce)
        try:
            async for attempt in retrying:
                with attempt:
                    try:
                        if not await self._stream_inbox(http, session):
                            raise _Transient("the inbox stream ended")
                    finally:
                        if self._inbox_progress:  # a request arrived: this failure is the first of a new run
                            self._inbox_progress = False
                            streak_start = attempt.retry_state.attempt_number - 1
        except _Transient as failure:
            raise HostConnectionError(self._gave_up(failure.reason)) from None

    def _gave_up(self, reason: str) -> str:
        if self._max_attempts == 0:
            return f"The inbox of session {self._session_id} was lost and reconnecting is disabled ({reason})"
        return (
            f"The inbox of session {self._session_id} was lost: {self._max_attempts} reconnect attempt(s) failed "
            f"(last: {reason})"
        )

    async def _stream_inbox(self, http: aiohttp.ClientSession, session: TurnSession) -> bool:
        """Read one inbox connection; True after ``shutdown``, False when the stream ended."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if self._last_event_id:
            headers["Last-Event-ID"] = self._last_event_id
        url = f"{self._base}/inbox"
        limit = self._protocol.max_line_bytes * _EVENT_LIMIT_FACTOR
        try:
            async with http.get(url, headers=headers, timeout=_STREAM_TIMEOUT) as response:
                status = response.status
                if not 200 <= status < 300:
                    if is_transient(status):
                        retry_after = retry_after_for_status(status, response.headers.get("Retry-After"))
                        raise _Transient(f"HTTP {status}", retry_after, status)
                    raise HostConnectionError(
                        f"The host refused the inbox of session {self._session_id} with HTTP {status}", status=status
                    )
                ids_seen = False  # the decoder starts each connection without an id: until the host sends one, the
                # previous connection's id stays the last one (as an EventSource keeps it across reconnects)
                events = decode_event_stream(response.content.iter_any(), url=url, max_event_bytes=limit)
                async with contextlib.aclosing(events):
                    async for event in events:
                        if event.id or ids_seen:
                            ids_seen, self._last_event_id = True, event.id
                        if not await self._dispatch(event, session):
                            return True
                return False
        except httpx2.SSEError as error:
            raise HostConnectionError(
                f"The inbox of session {self._session_id} cannot be read past an event of more than {limit} bytes"
            ) from error
        except _NETWORK_ERRORS as error:
            raise _Transient(_describe(error)) from None

    async def _dispatch(self, event: httpx2.ServerSentEvent, session: TurnSession) -> bool:
        if event.retry is not None and event.retry >= 0:
            self._follow_retry_field(event.retry)
        if len(event.data.encode()) > self._protocol.max_line_bytes:
            self._inbox_progress = True
            await session.report_unreadable(f"the request is longer than {self._protocol.max_line_bytes} bytes")
            return True
        if not event.data.strip():
            return True  # an id-only block or an empty keep-alive
        self._inbox_progress = True
        try:
            request = self._protocol.parse_request(event.data)
        except UnreadableLineError as error:
            await refuse_unreadable(session, event.data, error)
            return True
        return await session.handle(request)

    # --- events ------------------------------------------------------------------------------------------------------

    async def _enqueue(self, event: ServerEvent) -> None:
        line = self._protocol.serialize_event(event)
        if self._aborted or self._stopped:
            log.debug("event %s dropped: the runner is stopping", event.type)
            return
        self._outbox.append((event.type, line))
        self._outbox_changed.set()

    async def _send_events(self, http: aiohttp.ClientSession) -> None:
        while True:
            if not self._outbox:
                if self._closing:
                    return
                self._outbox_changed.clear()
                await self._outbox_changed.wait()
                continue
            batch = list(itertools.islice(self._outbox, self._batch))
            await self._deliver(http, batch)
            for _ in batch:
                self._outbox.popleft()

    async def _deliver(self, http: aiohttp.ClientSession, batch: list[tuple[str, str]]) -> None:
        body = (batch[0][1] if len(batch) == 1 else "[" + ",".join(line for _, line in batch) + "]").encode()

        def announce(failure: _Transient, number: int, delay: float) -> None:
            log.warning("Posting %d event(s) failed (%s); retry %d in %.2fs", len(batch), failure.reason, number, delay)

        try:
            async for attempt in _retrying(lambda: self._delivery_policy, _attempts_failed, announce):
                with attempt:
                    status = await self._post_events(http, body)
        except _Transient as failure:
            raise HostConnectionError(
                f"Events of session {self._session_id} could not be delivered: {self._max_attempts} retry "
                f"attempt(s) failed (last: {failure.reason})",
                status=failure.status,
            ) from None
        if 200 <= status < 300:
            return
        if len(batch) > 1:
            log.warning("The host refused a batch of %d events (HTTP %d); sending them one by one", len(batch), status)
            for item in batch:
                await self._deliver(http, [item])
            return
        log.error("The host refused a %s event (HTTP %d); the event is dropped", batch[0][0], status)

    async def _post_events(self, http: aiohttp.ClientSession, body: bytes) -> int:
        """POST ``body`` once; the status of an answer that is not worth retrying, else raise ``_Transient``."""
        try:
            async with http.post(
                f"{self._base}/events",
                data=body,
                headers={"Content-Type": "application/json; charset=utf-8"},
                timeout=_POST_TIMEOUT,
            ) as response:
                status = response.status
                retry_after = retry_after_for_status(status, response.headers.get("Retry-After"))
                with contextlib.suppress(*_NETWORK_ERRORS):
                    await response.read()  # so the connection can be reused
        except _NETWORK_ERRORS as error:
            raise _Transient(_describe(error)) from None
        if is_transient(status):
            raise _Transient(f"HTTP {status}", retry_after, status)
        return status

    def _follow_retry_field(self, retry_ms: int) -> None:
        """A host's ``retry:`` field sets the first reconnect delay (doubling from there, as before)."""
        first = min(max(retry_ms / 1000, 0.001), self._delivery_policy.max_backoff)
        self._inbox_policy = replace(self._delivery_policy, initial_backoff=first)


def _attempts_failed(state: RetryCallState) -> int:
    return state.attempt_number


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for it, without swallowing a cancellation of the caller."""
    if not task.done():
        task.cancel()
        await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: its error was reported another way (or not at all, when another error won)
