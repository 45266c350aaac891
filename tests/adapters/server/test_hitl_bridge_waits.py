"""HitlBridge with several approval waits at once (the agent's own turns never have two; other hosts may).

``ironhive run --server`` runs a round's tool calls one after another and its turns one at a time, so through the real
process at most one approval waits at any moment. The bridge still promises that several may wait and that answers
find them by id; these cases are proven here against the bridge itself.
"""

from __future__ import annotations

import asyncio
import time

from ironhive.adapters.server.hitl_bridge import CONNECTION_CLOSED, HitlBridge
from ironhive.ports.approval import ApprovalDecision, ApprovalRequest, RiskLevel
from ironhive.protocol.models import HitlRequestEvent, HitlResponseRequest, serialize_event
from tests.support.fakes import SequentialIds


def ask(path: str, call_id: str) -> ApprovalRequest:
    return ApprovalRequest(
        tool_name="write_file",
        arguments={"path": path, "content": "x"},
        call_id=call_id,
        level=RiskLevel.MEDIUM,
        reason=f"Write file: {path}",
        prompt="Allow this operation?",
    )


class Client:
    """The runner side: records every hitl_request written."""

    def __init__(self) -> None:
        self.requests: list[HitlRequestEvent] = []
        self.two_sent = asyncio.Event()

    async def send(self, event: HitlRequestEvent) -> None:
        self.requests.append(event)
        if len(self.requests) == 2:
            self.two_sent.set()


async def two_waiting(bridge: HitlBridge, client: Client) -> tuple[asyncio.Task[ApprovalDecision], ...]:
    first = asyncio.create_task(bridge.request_approval(ask("a.md", "call_a")))
    second = asyncio.create_task(bridge.request_approval(ask("b.md", "call_b")))
    await asyncio.wait_for(client.two_sent.wait(), 5)
    assert len(bridge.pending_ids) == 2  # each wait was registered before its request was written
    return first, second


async def test_two_waits_answered_by_id_in_reverse_order() -> None:
    client = Client()
    bridge = HitlBridge(ids=SequentialIds())
    bridge.attach(client.send)
    first, second = await two_waiting(bridge, client)
    by_call = {request.call_id: request.id for request in client.requests}
    assert by_call == {"call_a": f"{1:032x}", "call_b": f"{2:032x}"}

    assert bridge.resolve(HitlResponseRequest(approved=False, reason="not b", id=by_call["call_b"])) is None
    assert await second == ApprovalDecision(approved=False, reason="not b")
    assert not first.done()
    answer = HitlResponseRequest(approved=True, id=by_call["call_a"], modified_arguments={"path": "c.md"})
    assert bridge.resolve(answer) is None
    assert await first == ApprovalDecision(approved=True, modified_arguments={"path": "c.md"})
    assert bridge.pending_ids == ()


async def test_an_answer_without_id_is_dropped_while_two_wait_and_taken_when_one_is_left() -> None:
    client = Client()
    bridge = HitlBridge(ids=SequentialIds())
    bridge.attach(client.send)
    first, second = await two_waiting(bridge, client)

    assert bridge.resolve(HitlResponseRequest(approved=True)) == (
        "an answer without id cannot choose between 2 waiting requests"
    )
    assert bridge.resolve(HitlResponseRequest(approved=True, id="f" * 32)) == (
        f"no approval request with id {'f' * 32} is waiting"
    )
    await asyncio.sleep(0)
    assert not first.done() and not second.done()
    assert len(bridge.pending_ids) == 2

    assert bridge.resolve(HitlResponseRequest(approved=True, id=client.requests[0].id)) is None
    assert await first == ApprovalDecision(approved=True)
    assert bridge.resolve(HitlResponseRequest(approved=False)) is None  # exactly one waits now
    assert await second == ApprovalDecision(approved=False, reason="the operator declined")


async def test_detaching_rejects_every_pending_wait() -> None:
    client = Client()
    bridge = HitlBridge(ids=SequentialIds())
    bridge.attach(client.send)
    first, second = await two_waiting(bridge, client)
    bridge.detach()
    assert await first == await second == ApprovalDecision(approved=False, reason=CONNECTION_CLOSED)
    assert bridge.pending_ids == ()


async def test_cancelling_one_wait_leaves_the_other_answerable() -> None:
    client = Client()
    bridge = HitlBridge(ids=SequentialIds())
    bridge.attach(client.send)
    first, second = await two_waiting(bridge, client)
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    assert first.cancelled()
    assert bridge.pending_ids == (client.requests[1].id,)
    assert bridge.resolve(HitlResponseRequest(approved=True)) is None
    assert await second == ApprovalDecision(approved=True)


async def test_an_answer_without_id_received_before_the_request_was_sent_is_dropped() -> None:
    """A late answer to an earlier request, already read when the next one is written, never approves the next."""
    client = Client()
    bridge = HitlBridge(ids=SequentialIds())
    bridge.attach(client.send)
    received_earlier = time.monotonic()
    waiting = asyncio.create_task(bridge.request_approval(ask("a.md", "call_a")))
    await asyncio.sleep(0)  # the task runs up to its wait: the request is written
    assert len(client.requests) == 1
    stale = HitlResponseRequest(approved=True, always_approve=True)
    assert bridge.resolve(stale, received_at=received_earlier) == (
        "the answer without id was received before the waiting request was sent"
    )
    await asyncio.sleep(0)
    assert not waiting.done()
    assert bridge.resolve(HitlResponseRequest(approved=False), received_at=time.monotonic()) is None
    assert await waiting == ApprovalDecision(approved=False, reason="the operator declined")


async def test_an_answer_with_nothing_waiting_is_dropped_with_a_reason() -> None:
    bridge = HitlBridge(ids=SequentialIds())
    bridge.attach(Client().send)
    assert bridge.resolve(HitlResponseRequest(approved=True)) == "no approval request is waiting"
    assert bridge.resolve(HitlResponseRequest(approved=True, id="a" * 32)) == (
        f"no approval request with id {'a' * 32} is waiting"
    )


async def test_the_request_carries_the_scope_of_always() -> None:
    client = Client()
    bridge = HitlBridge(ids=SequentialIds(), timeout_seconds=0.05)
    bridge.attach(client.send)
    request = ApprovalRequest(
        tool_name="execute_command",
        arguments={"command": "echo hi"},
        call_id="call_x",
        level=RiskLevel.MEDIUM,
        reason="Shell command: echo hi",
        prompt="Allow executing this command?",
        scope="execute_command: echo *",
    )
    decision = await bridge.request_approval(request)
    assert not decision.approved  # timed out
    assert [(r.scope, r.target) for r in client.requests] == [("execute_command: echo *", "echo hi")]
    assert '"scope":"execute_command: echo *"' in serialize_event(client.requests[0])
