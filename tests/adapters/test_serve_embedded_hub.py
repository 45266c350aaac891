"""EmbeddedTurnHub with a fake OpenRuntime: order, the concurrency cap, queue limits, cancels, approvals, LRU."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.serve.embedded_hub import EmbeddedTurnHub
from ironhive.adapters.serve.hub import SessionRuntime, TurnHub, TurnQueueFullError
from ironhive.adapters.serve.memory_log import MemoryEventLog
from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.domain.errors import ConfigurationError
from ironhive.ports.approval import ApprovalRequest, RiskLevel
from ironhive.protocol.models import (
    HitlResponseRequest,
    ServerEvent,
    TextDeltaEvent,
    ToolStartEvent,
    TurnEndEvent,
    UserMessageRequest,
)


@dataclass
class FakeRuntimes:
    """An OpenRuntime whose agents follow the message: ``hold`` waits for ``release``, ``ask`` asks an approval,
    ``tool`` opens a tool call and holds, ``fail`` raises; any other message is echoed. Records what happens."""

    approval_timeout: float = 30.0
    failing_sessions: set[str] = field(default_factory=set)
    opened: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    processed: list[tuple[str, str]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    running: int = 0
    most_running: int = 0
    bridges: dict[str, HitlBridge] = field(default_factory=dict)

    async def __call__(self, session_id: str) -> SessionRuntime:
        await asyncio.sleep(0)
        if session_id in self.failing_sessions:
            raise ConfigurationError(f"cannot open {session_id}")
        self.opened.append(session_id)
        bridge = self.bridges[session_id] = HitlBridge(timeout_seconds=self.approval_timeout)

        async def process(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
            self.processed.append((session_id, message.content))
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            try:
                if message.content.startswith("hold"):
                    await self.release.wait()
                elif message.content.startswith("sleep"):
                    await asyncio.sleep(0.02)
                elif message.content == "tool":
                    yield ToolStartEvent(tool="read_file", call_id="c1")
                    await self.release.wait()
                elif message.content == "ask":
                    decision = await bridge.request_approval(
                        ApprovalRequest(
                            tool_name="execute_command",
                            arguments={"command": "ls"},
                            call_id="c1",
                            level=RiskLevel.HIGH,
                            reason="run a command",
                            prompt="Run ls?",
                        )
                    )
                    yield TextDeltaEvent(content=f"approved={decision.approved} reason={decision.reason}")
                elif message.content == "fail":
                    raise RuntimeError("the model broke")
                yield TextDeltaEvent(content=message.content)
                yield TurnEndEvent.from_counts()
            finally:
                self.running -= 1

        async def close() -> None:
            self.closed.append(session_id)

        return SessionRuntime(process=process, bridge=bridge, close=close)


def message(content: str) -> UserMessageRequest:
    return UserMessageRequest(content=content)


async def events_until(
    log: MemoryEventLog, session_id: str, turn_ends: int, *, seconds: float = 5.0
) -> list[dict[str, object]]:
    """The session's events from the start until its ``turn_ends``-th turn_end (fails after ``seconds``)."""
    seen: list[dict[str, object]] = []
    after: str | None = None
    async with asyncio.timeout(seconds):
        while sum(1 for e in seen if e["type"] == "turn_end") < turn_ends:
            for event in await log.read_after(session_id, after, wait_seconds=seconds):
                seen.append(json.loads(event.line))
                after = event.id
    return seen


def texts(events: list[dict[str, object]]) -> list[object]:
    return [e["content"] for e in events if e["type"] == "text_delta"]


def kinds(events: list[dict[str, object]]) -> list[object]:
    return [e["type"] for e in events]


@pytest.fixture
def runtimes() -> FakeRuntimes:
    return FakeRuntimes()


@pytest.fixture
def log() -> MemoryEventLog:
    return MemoryEventLog(limit_per_session=1000, max_sessions=100)


HubFactory = Callable[..., EmbeddedTurnHub]


@pytest.fixture
async def make_hub(runtimes: FakeRuntimes, log: MemoryEventLog) -> AsyncIterator[HubFactory]:
    hubs: list[EmbeddedTurnHub] = []

    def make(
        *, max_concurrent_turns: int = 4, max_queued_turns: int = 8, max_live_sessions: int = 50
    ) -> EmbeddedTurnHub:
        hub = EmbeddedTurnHub(
            runtimes,
            log,
            max_concurrent_turns=max_concurrent_turns,
            max_queued_turns=max_queued_turns,
            max_live_sessions=max_live_sessions,
        )
        hubs.append(hub)
        return hub

    yield make
    runtimes.release.set()
    for hub in hubs:
        await hub.aclose()


async def test_it_is_a_turn_hub(make_hub: HubFactory) -> None:
    assert isinstance(make_hub(), TurnHub)


def test_limits_must_be_positive(runtimes: FakeRuntimes, log: MemoryEventLog) -> None:
    with pytest.raises(ValueError, match="positive"):
        EmbeddedTurnHub(runtimes, log, max_concurrent_turns=0, max_queued_turns=1, max_live_sessions=1)


async def test_a_sessions_turns_run_in_order_each_ending_once(make_hub: HubFactory, log: MemoryEventLog) -> None:
    hub = make_hub()
    turn_ids = [await hub.submit("s", message(f"sleep {n}")) for n in range(5)]
    assert len(set(turn_ids)) == 5 and all(len(t) == 32 for t in turn_ids)
    events = await events_until(log, "s", 5)
    assert texts(events) == [f"sleep {n}" for n in range(5)]
    assert kinds(events) == ["text_delta", "turn_end"] * 5


async def test_turns_across_sessions_never_exceed_the_concurrency_cap(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    hub = make_hub(max_concurrent_turns=3)
    for session in range(8):
        for turn in range(3):
            await hub.submit(f"s{session}", message(f"sleep {turn}"))
    for session in range(8):
        events = await events_until(log, f"s{session}", 3)
        assert texts(events) == [f"sleep {turn}" for turn in range(3)]
    assert runtimes.most_running == 3
    assert await hub.load() == type(await hub.load())(running=0, queued=0)


async def test_a_full_queue_refuses_the_turn_and_queues_nothing(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    hub = make_hub(max_queued_turns=2)
    await hub.submit("s", message("hold"))
    await asyncio.sleep(0.01)
    await hub.submit("s", message("q1"))
    await hub.submit("s", message("q2"))
    with pytest.raises(TurnQueueFullError) as refused:
        await hub.submit("s", message("q3"))
    assert refused.value.retry_after_seconds > 0
    load = await hub.load()
    assert (load.running, load.queued) == (1, 2)
    runtimes.release.set()
    events = await events_until(log, "s", 3)
    assert texts(events) == ["hold", "q1", "q2"]
    await asyncio.sleep(0.05)
    assert "q3" not in [content for _, content in runtimes.processed]
    everything = [json.loads(e.line) for e in await log.read_after("s", None, wait_seconds=0)]
    assert kinds(everything).count("turn_end") == 3


async def test_turns_waiting_for_a_slot_count_as_queued(make_hub: HubFactory, runtimes: FakeRuntimes) -> None:
    hub = make_hub(max_concurrent_turns=1)
    await hub.submit("a", message("hold"))
    await hub.submit("b", message("hold"))
    await hub.submit("b", message("after"))
    await asyncio.sleep(0.02)
    load = await hub.load()
    assert (load.running, load.queued) == (1, 2)


async def test_cancelling_the_running_turn_ends_it_once_and_closes_its_tool_call(
    make_hub: HubFactory, log: MemoryEventLog
) -> None:
    hub = make_hub()
    turn = await hub.submit("s", message("tool"))
    await hub.submit("s", message("next"))
    await asyncio.sleep(0.02)
    assert await hub.cancel("s", turn)
    events = await events_until(log, "s", 2)
    assert kinds(events) == ["tool_start", "tool_end", "turn_end", "text_delta", "turn_end"]
    assert events[1]["success"] is False
    assert not await hub.cancel("s", turn)  # already over


async def test_cancel_without_a_turn_id_cancels_the_running_one(make_hub: HubFactory, log: MemoryEventLog) -> None:
    hub = make_hub()
    assert not await hub.cancel("s")
    await hub.submit("s", message("hold"))
    await asyncio.sleep(0.02)
    assert await hub.cancel("s")
    assert kinds(await events_until(log, "s", 1)) == ["turn_end"]


async def test_a_cancelled_queued_turn_never_runs_and_ends_once_in_its_place(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    hub = make_hub(max_queued_turns=3)
    await hub.submit("s", message("hold"))
    await asyncio.sleep(0.01)
    queued = [await hub.submit("s", message(f"q{n}")) for n in range(3)]
    assert await hub.cancel("s", queued[0])
    assert await hub.cancel("s", queued[1])
    assert not await hub.cancel("s", queued[1])
    assert not await hub.cancel("s", "0" * 32)
    # the cancelled turns no longer count: two more fit
    await hub.submit("s", message("q3"))
    await hub.submit("s", message("q4"))
    runtimes.release.set()
    events = await events_until(log, "s", 6)
    assert kinds(events) == [
        *("text_delta", "turn_end"),  # hold
        *("turn_end", "turn_end"),  # q0 and q1, cancelled in their place
        *("text_delta", "turn_end") * 3,  # q2, q3, q4
    ]
    assert texts(events) == ["hold", "q2", "q3", "q4"]
    assert [content for _, content in runtimes.processed] == ["hold", "q2", "q3", "q4"]


async def test_an_approval_is_answered_through_the_hub(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    hub = make_hub()
    assert await hub.answer("s", HitlResponseRequest(approved=True)) is not None  # nothing asked yet
    await hub.submit("s", message("ask"))
    request = (await events_until_type(log, "s", "hitl_request"))[-1]
    assert request["tool_name"] == "execute_command"
    problem = await hub.answer("s", HitlResponseRequest(approved=True, id="f" * 32))
    assert problem is not None and "no approval request with id" in problem
    assert await hub.answer("s", HitlResponseRequest(approved=True, id=str(request["id"]))) is None
    events = await events_until(log, "s", 1)
    assert texts(events) == ["approved=True reason=None", "ask"]


async def test_an_unanswered_approval_expires_as_a_rejection(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    runtimes.approval_timeout = 0.05
    hub = make_hub()
    await hub.submit("s", message("ask"))
    events = await events_until(log, "s", 1)
    assert kinds(events) == ["hitl_request", "text_delta", "text_delta", "turn_end"]
    assert texts(events)[0] == "approved=False reason=no answer to the approval request within 0.05s"


async def test_a_runtime_that_cannot_open_ends_the_turn_with_an_error(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    runtimes.failing_sessions.add("broken")
    hub = make_hub()
    await hub.submit("broken", message("hello"))
    await hub.submit("fine", message("hello"))
    events = await events_until(log, "broken", 1)
    assert events == [{"type": "error", "message": "cannot open broken"}, events[-1]]
    assert events[-1]["type"] == "turn_end"
    assert texts(await events_until(log, "fine", 1)) == ["hello"]
    runtimes.failing_sessions.clear()  # the next turn tries again
    await hub.submit("broken", message("again"))
    assert texts(await events_until(log, "broken", 2)) == ["again"]


async def test_a_failing_turn_ends_with_an_error_and_the_session_goes_on(
    make_hub: HubFactory, log: MemoryEventLog
) -> None:
    hub = make_hub()
    await hub.submit("s", message("fail"))
    await hub.submit("s", message("after"))
    events = await events_until(log, "s", 2)
    assert kinds(events) == ["error", "turn_end", "text_delta", "turn_end"]
    assert events[0]["message"] == "the model broke"


async def test_idle_sessions_beyond_the_limit_are_released_least_recently_used_first(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    hub = make_hub(max_live_sessions=2)
    for session in ("a", "b"):
        await hub.submit(session, message("x"))
        await events_until(log, session, 1)
    await hub.submit("a", message("y"))  # a is now the most recently used
    await events_until(log, "a", 2)
    await hub.submit("c", message("x"))
    await events_until(log, "c", 1)
    assert runtimes.closed == ["b"]
    assert hub.live_sessions == 2
    await hub.submit("b", message("back"))  # reopened on its next turn
    assert texts(await events_until(log, "b", 2)) == ["x", "back"]
    assert runtimes.opened == ["a", "b", "c", "b"]
    assert runtimes.closed == ["b", "a"]


async def test_when_every_held_session_is_busy_a_new_session_is_refused(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    hub = make_hub(max_live_sessions=2)
    await hub.submit("a", message("hold"))
    await hub.submit("b", message("hold"))
    with pytest.raises(TurnQueueFullError, match="busy"):
        await hub.submit("c", message("x"))
    await hub.submit("a", message("more"))  # a held session still takes turns
    runtimes.release.set()
    await events_until(log, "a", 2)
    await events_until(log, "b", 1)
    await hub.submit("c", message("x"))
    assert texts(await events_until(log, "c", 1)) == ["x"]


async def test_drop_cancels_everything_and_releases_the_agent(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    hub = make_hub()
    await hub.submit("s", message("tool"))
    await hub.submit("s", message("queued"))
    await asyncio.sleep(0.02)
    await hub.drop("s")
    events = await events_until(log, "s", 2)
    assert kinds(events) == ["tool_start", "tool_end", "turn_end", "turn_end"]
    assert runtimes.closed == ["s"]
    assert hub.live_sessions == 0
    assert [content for _, content in runtimes.processed] == ["tool"]
    await hub.drop("never-seen")


async def test_aclose_ends_every_turn_and_rejects_waiting_approvals(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    hub = make_hub()
    await hub.submit("a", message("ask"))
    await hub.submit("b", message("hold"))
    await hub.submit("b", message("queued"))
    await events_until_type(log, "a", "hitl_request")
    await hub.aclose()
    assert kinds(await events_until(log, "a", 1))[-1] == "turn_end"
    assert kinds(await events_until(log, "b", 2)) == ["turn_end", "turn_end"]
    assert sorted(runtimes.closed) == ["a", "b"]
    with pytest.raises(TurnQueueFullError, match="shutting down"):
        await hub.submit("a", message("late"))


async def test_many_sessions_and_turns_hold_bounded_state(runtimes: FakeRuntimes) -> None:
    log = MemoryEventLog(limit_per_session=50, max_sessions=20)
    hub = EmbeddedTurnHub(runtimes, log, max_concurrent_turns=4, max_queued_turns=4, max_live_sessions=10)
    try:
        for round_ in range(10):
            sessions = [f"s{round_}-{n}" for n in range(30)]
            for session in sessions:
                await hub.submit(session, message("x"))
                await hub.submit(session, message("y"))
                if hub.live_sessions >= 10:
                    await events_until(log, session, 2)  # let the turns end so older sessions become idle
            assert hub.live_sessions <= 10
            assert log.session_count <= 20
        assert len(runtimes.closed) >= 300 - 10
    finally:
        await hub.aclose()


async def events_until_type(
    log: MemoryEventLog, session_id: str, kind: str, *, seconds: float = 5.0
) -> list[dict[str, object]]:
    seen: list[dict[str, object]] = []
    after: str | None = None
    async with asyncio.timeout(seconds):
        while not seen or seen[-1]["type"] != kind:
            for event in await log.read_after(session_id, after, wait_seconds=seconds):
                seen.append(json.loads(event.line))
                after = event.id
                if seen[-1]["type"] == kind:
                    break
    return seen


async def test_a_turn_cancelled_while_it_waits_for_a_slot_ends_once_and_frees_nothing_it_never_held(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    hub = make_hub(max_concurrent_turns=1)
    await hub.submit("a", message("hold"))
    waiting = await hub.submit("b", message("never"))
    await asyncio.sleep(0.02)
    assert await hub.cancel("b", waiting)
    assert kinds(await events_until(log, "b", 1)) == ["turn_end"]
    runtimes.release.set()
    await events_until(log, "a", 1)
    await hub.submit("b", message("later"))  # the slot was not lost
    assert texts(await events_until(log, "b", 2)) == ["later"]
    assert ("b", "never") not in runtimes.processed
    load = await hub.load()
    assert (load.running, load.queued) == (0, 0)


async def test_an_answer_reaches_only_its_own_session(
    make_hub: HubFactory, runtimes: FakeRuntimes, log: MemoryEventLog
) -> None:
    hub = make_hub()
    await hub.submit("a", message("ask"))
    await hub.submit("b", message("hold"))
    request = (await events_until_type(log, "a", "hitl_request"))[-1]
    assert await hub.answer("b", HitlResponseRequest(approved=True, id=str(request["id"]))) is not None
    assert await hub.answer("a", HitlResponseRequest(approved=False, id=str(request["id"]))) is None
    assert texts(await events_until(log, "a", 1))[0] == "approved=False reason=the operator declined"


@settings(max_examples=60, deadline=None)
@given(
    actions=st.lists(
        st.one_of(
            st.tuples(st.just("submit"), st.integers(0, 2), st.integers(0, 3)),
            st.tuples(st.just("cancel"), st.integers(0, 2), st.integers(0, 30)),
            st.tuples(st.just("tick"), st.integers(0, 2), st.integers(1, 3)),
        ),
        max_size=40,
    )
)
def test_random_submits_cancels_and_ticks_end_every_taken_turn_exactly_once(
    actions: list[tuple[str, int, int]],
) -> None:
    async def scenario() -> None:
        runtimes = FakeRuntimes()
        log = MemoryEventLog(limit_per_session=1000, max_sessions=10)
        hub = EmbeddedTurnHub(runtimes, log, max_concurrent_turns=2, max_queued_turns=3, max_live_sessions=2)
        taken: dict[str, list[tuple[str, str]]] = {f"s{n}": [] for n in range(3)}
        counter = 0
        try:
            for action, session_number, value in actions:
                session = f"s{session_number}"
                if action == "submit":
                    counter += 1
                    content = f"{'sleep' if value else 'quick'} {counter}"
                    with contextlib.suppress(TurnQueueFullError):
                        taken[session].append((await hub.submit(session, message(content)), content))
                elif action == "cancel" and taken[session]:
                    await hub.cancel(session, taken[session][value % len(taken[session])][0])
                else:
                    for _ in range(value):
                        await asyncio.sleep(0)
            for session, turns in taken.items():
                events = await events_until(log, session, len(turns))
                assert kinds(events).count("turn_end") == len(turns)
                ran = [content for name, content in runtimes.processed if name == session]
                contents = [content for _, content in turns]
                assert ran == [content for content in contents if content in ran]  # in submission order
                assert set(texts(events)) <= set(ran)  # a turn cancelled while running wrote no text
            await asyncio.sleep(0.05)
            for session, turns in taken.items():  # and nothing after the last turn_end
                everything = [json.loads(e.line) for e in await log.read_after(session, None, wait_seconds=0)]
                assert kinds(everything).count("turn_end") == len(turns)
            assert hub.live_sessions <= 2
        finally:
            await hub.aclose()

    asyncio.run(scenario())
