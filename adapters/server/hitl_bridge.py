"""HitlBridge: an ApprovalService whose human is the protocol client (hitl_request → hitl_response)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from ironhive.adapters.system import UuidIdGenerator
from ironhive.ports.approval import ApprovalDecision, ApprovalRequest
from ironhive.ports.chat import JsonValue
from ironhive.ports.system import IdGenerator
from ironhive.protocol.models import HitlRequestEvent, HitlResponseRequest

DEFAULT_TIMEOUT_SECONDS = 300.0
NO_CLIENT = "no client is attached to answer approval requests"
CONNECTION_CLOSED = "the client connection closed before answering"
SHUT_DOWN = "the approval bridge was shut down"
DECLINED = "the operator declined"
_TARGET_ARGUMENTS = ("path", "command", "url", "query")

log = logging.getLogger(__name__)

SendRequest = Callable[[HitlRequestEvent], Awaitable[None]]


def approval_target(arguments: Mapping[str, JsonValue]) -> str:
    """The first non-empty of the call's ``path``, ``command``, ``url`` or ``query`` arguments, else ""."""
    for name in _TARGET_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return ""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Answer:
    decision: ApprovalDecision


@dataclass(frozen=True, kw_only=True, slots=True)
class _Wait:
    future: asyncio.Future[_Answer]
    # time.monotonic() just before the request is written: taken before, not after, because the reader thread may
    # stamp a quick client's answer before this task gets the GIL back from the write.
    sent_at: float


class HitlBridge:
    """Sends each asked call to the attached runner's client and waits for its answer.

    Every way of not getting an answer is a rejection, never a pass: no runner attached, the timeout, a runner that
    detaches (its connection closed) and a bridge that is shut down. A cancelled turn cancels the wait.

    An answer is taken only when it can belong to the request it resolves: with an ``id``, the waiting request of that
    id; without one, the only waiting request, and only when the answer was received after that request was written
    (so a late answer to a request that timed out, or one already on its way, never approves the next). Every other
    answer is dropped with the reason :meth:`resolve` returns.

    Args:
        timeout_seconds: How long a request waits for its answer (5 minutes by default; must be positive).
        ids: Makes the 32-hex request ids.
    """

    def __init__(self, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, ids: IdGenerator | None = None) -> None:
        if timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        self._timeout = timeout_seconds
        self._ids = ids or UuidIdGenerator()
        self._send: SendRequest | None = None
        self._pending: dict[str, _Wait] = {}
        self._closed = False

    @property
    def timeout_seconds(self) -> float:
        """How long a request waits for its answer."""
        return self._timeout

    @property
    def pending_ids(self) -> tuple[str, ...]:
        """The ids of the requests waiting for an answer, oldest first."""
        return tuple(self._pending)

    def attach(self, send: SendRequest) -> None:
        """Attach a runner: ``send`` writes a ``hitl_request`` to its client. One runner at a time."""
        if self._send is not None:
            raise RuntimeError("A runner is already attached to this approval bridge.")
        self._send = send

    def detach(self) -> None:
        """Detach the runner; every pending request is rejected (the connection closed)."""
        self._send = None
        self._reject_all(CONNECTION_CLOSED)

    def close(self) -> None:
        """Shut the bridge down; pending and later requests are rejected."""
        self._closed = True
        self._send = None
        self._reject_all(SHUT_DOWN)

    def resolve(self, response: HitlResponseRequest, *, received_at: float | None = None) -> str | None:
        """Answer a waiting request.

        Args:
            response: The client's answer.
            received_at: When the answer was received (``time.monotonic()``; now when not given). An answer without
                ``id`` is taken only when it was received after the one waiting request was written.

        Returns:
            ``None`` when the answer was taken, else why it was dropped (fit to show to the client).
        """
        received = time.monotonic() if received_at is None else received_at
        if response.id is not None:
            wait = self._pending.get(response.id)
            problem = None if wait is not None else f"no approval request with id {response.id} is waiting"
        elif not self._pending:
            wait, problem = None, "no approval request is waiting"
        elif len(self._pending) > 1:
            wait, problem = None, f"an answer without id cannot choose between {len(self._pending)} waiting requests"
        else:
            wait = next(iter(self._pending.values()))
            late = received < wait.sent_at
            problem = "the answer without id was received before the waiting request was sent" if late else None
        if wait is None or problem is not None or wait.future.done():
            reason = problem or "the request was already answered"
            log.warning("approval answer dropped: %s", reason)
            return reason
        decision = ApprovalDecision(
            approved=response.approved,
            reason=None if response.approved else (response.reason or DECLINED),
            modified_arguments=dict(response.modified_arguments) if response.modified_arguments else None,
            always_approve=response.always_approve,
        )
        wait.future.set_result(_Answer(decision=decision))
        return None

    async def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the client and wait for its answer (or a rejection)."""
        if self._closed:
            return ApprovalDecision(approved=False, reason=SHUT_DOWN)
        send = self._send
        if send is None:
            return ApprovalDecision(approved=False, reason=NO_CLIENT)
        request_id = self._ids.new_id()
        future: asyncio.Future[_Answer] = asyncio.get_running_loop().create_future()
        # registered before the request is written: an instant answer is kept
        self._pending[request_id] = _Wait(future=future, sent_at=time.monotonic())
        try:
            await send(
                HitlRequestEvent(
                    id=request_id,
                    action=request.reason or request.tool_name,
                    target=approval_target(request.arguments),
                    description=request.prompt,
                    tool_name=request.tool_name,
                    arguments=dict(request.arguments),
                    call_id=request.call_id,
                    level=request.level.value,
                    scope=request.scope,
                )
            )
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallows a cancel that races with the answer
            async with asyncio.timeout(self._timeout):
                answer = await asyncio.shield(future)
        except TimeoutError:
            return ApprovalDecision(
                approved=False, reason=f"no answer to the approval request within {self._timeout:g}s"
            )
        finally:
            self._pending.pop(request_id, None)
        return answer.decision

    def _reject_all(self, reason: str) -> None:
        for wait in self._pending.values():
            if not wait.future.done():
                wait.future.set_result(_Answer(decision=ApprovalDecision(approved=False, reason=reason)))
        self._pending.clear()
