"""HitlBridge with several approval waits at once (the agent's own turns never have two; other hosts may).

``ironhive run --server`` runs a round's tool calls one after another and its turns one at a time, so through the real
process at most one approval waits at any moment. The bridge still promises that several may wait and that answers
find them by id; these cases are proven here against the bridge itself.
"""

from __future__ import annotations

import asyncio

from ironhive.adapters.protocol.models import HitlRequestEvent, HitlResponseRequest
from ironhive.adapters.server.hitl_bridge import CONNECTION_CLOSED, HitlBridge
from ironhive.ports.approval import ApprovalDecision, ApprovalRequest, RiskLevel
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

    assert bridge.resolve(HitlResponseRequest(approved=False, reason="not b", id=by_call["call_b"]))
    assert await second == ApprovalDecision(approved=False, reason="not b")
    assert not first.done()
    assert bridge.resolve(HitlResponseRequest(approved=True, id=by_call["call_a"], modified_arguments={"path": "c.md"}))
    assert await first == ApprovalDecision(approved=True, modified_arguments={"path": "c.md"})
    assert bridge.pending_ids == ()


async def test_an_answer_without_id_is_dropped_while_two_wait_and_taken_when_one_is_left() -> None:
    client = Client()
    bridge = HitlBridge(ids=SequentialIds())
    bridge.attach(client.send)
    first, second = await two_waiting(bridge, client)

    assert not bridge.resolve(HitlResponseRequest(approved=True))  # ambiguous: dropped
    assert not bridge.resolve(HitlResponseRequest(approved=True, id="f" * 32))  # unknown id: dropped
    await asyncio.sleep(0)
    assert not first.done() and not second.done()
    assert len(bridge.pending_ids) == 2

    assert bridge.resolve(HitlResponseRequest(approved=True, id=client.requests[0].id))
    assert await first == ApprovalDecision(approved=True)
    assert bridge.resolve(HitlResponseRequest(approved=False))  # exactly one waits now
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
    assert bridge.resolve(HitlResponseRequest(approved=True))
    assert await second == ApprovalDecision(approved=True)
