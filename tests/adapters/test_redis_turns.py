"""Turns on Redis against a real redis-server: RedisEventLog, RedisTurnHub and in-process RedisTurnWorkers with a
scripted runtime — order per session across workers, approvals and cancels reaching the worker, take-over."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from ironhive.adapters.serve.hub import SessionRuntime, TurnQueueFullError
from ironhive.adapters.serve.redis_hub import ControlMessage, RedisTurnHub
from ironhive.adapters.serve.redis_keys import TurnKeys
from ironhive.adapters.serve.redis_log import RedisEventLog
from ironhive.adapters.serve.redis_worker import RedisTurnWorker
from ironhive.adapters.server.hitl_bridge import HitlBridge
from ironhive.adapters.sessions.redis_connection import open_redis
from ironhive.adapters.sessions.redis_store import RedisSessionStore
from ironhive.domain.errors import SessionNotFoundError
from ironhive.ports.approval import ApprovalRequest, RiskLevel
from ironhive.ports.chat import ChatMessage, Role
from ironhive.ports.sessions import SessionStore
from ironhive.protocol.models import (
    HitlResponseRequest,
    ServerEvent,
    TextDeltaEvent,
    TurnEndEvent,
    UserMessageRequest,
)
from tests.support.redis_server import RedisServer, redis_server

PROJECT = "0123456789abcdef"
KEYS = TurnKeys(f"ironhive:{{{PROJECT}}}:")


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with redis_server() as running:
        yield running


@pytest.fixture
async def client(server: RedisServer) -> AsyncIterator[Redis]:
    server.flush()
    connected = await open_redis(server.url)
    yield connected
    await connected.aclose()


@pytest.fixture
def store(client: Redis) -> RedisSessionStore:
    return RedisSessionStore(client, project_key=PROJECT, project_path="/p")


@pytest.fixture
def events(client: Redis) -> RedisEventLog:
    return RedisEventLog(client, limit=1000, keys=KEYS)


# --- the event log ---------------------------------------------------------------------------------------------------


async def test_events_come_back_in_order_after_any_id(events: RedisEventLog) -> None:
    ids = [await events.append("s", f'{{"type":"text_delta","content":"{n}"}}') for n in range(5)]
    assert ids == sorted(ids, key=lambda i: tuple(int(p) for p in i.split("-")))
    everything = await events.read_after("s", None, wait_seconds=0)
    assert [e.id for e in everything] == ids
    assert [json.loads(e.line)["content"] for e in await events.read_after("s", ids[2], wait_seconds=0)] == ["3", "4"]
    assert await events.read_after("s", ids[-1], wait_seconds=0) == []
    assert await events.read_after("other", None, wait_seconds=0) == []


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(garbage=st.text(max_size=40))
async def test_an_unreadable_last_event_id_replays_from_the_oldest(events: RedisEventLog, garbage: str) -> None:
    await events.forget("g")
    first = await events.append("g", "a")
    await events.append("g", "b")
    read = await events.read_after("g", garbage, wait_seconds=0)
    # a real stream id reads after itself; anything else from the oldest kept
    assert [e.line for e in read] in (["a", "b"], ["b"], [])
    if not garbage[:1].isdigit():
        assert [e.id for e in read][:1] == [first]


@pytest.mark.parametrize(
    "edge",
    ["0", "5", "0-0", "18446744073709551615-18446744073709551615", "18446744073709551616", "1-", "-1", "1-2-3",
     "\u0663", "\u0663-\u0661", " 1-0", "1-0\n", "$", ">", "+", "-"],
)  # fmt: skip
async def test_edge_ids_never_fail_a_read(events: RedisEventLog, edge: str) -> None:
    await events.forget("e")
    await events.append("e", "a")
    assert [e.line for e in await events.read_after("e", edge, wait_seconds=0)] in (["a"], [])


async def test_a_reader_waits_for_the_next_event(events: RedisEventLog) -> None:
    last = await events.append("w", "a")
    reader = asyncio.create_task(events.read_after("w", last, wait_seconds=5))
    await asyncio.sleep(0.1)
    assert not reader.done()
    await events.append("w", "b")
    assert [e.line for e in await asyncio.wait_for(reader, 5)] == ["b"]
    assert await events.read_after("w", None, wait_seconds=0.05) != []


async def test_the_log_is_bounded_and_forgotten(client: Redis) -> None:
    log = RedisEventLog(client, limit=100, keys=KEYS)
    for n in range(1000):
        await log.append("b", str(n))
    kept = await log.read_after("b", None, wait_seconds=0)
    assert 100 <= len(kept) < 300
    assert kept[-1].line == "999"
    await log.forget("b")
    assert await log.read_after("b", None, wait_seconds=0) == []


# --- a scripted runtime ----------------------------------------------------------------------------------------------


@dataclass
class Script:
    """What the fake agent does: how long a turn takes, and which turns ask approval or hang."""

    delay: Callable[[], float] = lambda: 0.0
    ask_approval: bool = False
    hang: asyncio.Event | None = None
    started: list[str] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)


def runtime_factory(script: Script) -> Callable[[str, SessionStore], Awaitable[SessionRuntime]]:
    """An agent per turn that reads the stored history (as the real one does) and records its turn in the store."""

    async def open_runtime(session_id: str, store: SessionStore) -> SessionRuntime:
        try:
            history = await store.load_messages(session_id)
        except SessionNotFoundError:
            history = ()
        bridge = HitlBridge(timeout_seconds=30)

        async def process(message: UserMessageRequest) -> AsyncIterator[ServerEvent]:
            script.started.append(message.content)
            script.attempts[message.content] = script.attempts.get(message.content, 0) + 1
            yield TextDeltaEvent(content=f"{message.content} saw {len(history)}")
            if script.hang is not None:
                await script.hang.wait()
            answer = ""
            if script.ask_approval:
                decision = await bridge.request_approval(
                    ApprovalRequest(
                        tool_name="write_file",
                        arguments={"path": "a.txt"},
                        call_id="c1",
                        level=RiskLevel.MEDIUM,
                        reason="write",
                        prompt="Allow?",
                    )
                )
                answer = f" approved={decision.approved}"
            await asyncio.sleep(script.delay())
            with contextlib.suppress(Exception):
                await store.create("m", session_id)
            await store.append_turn(
                session_id,
                (ChatMessage.of_text(Role.USER, message.content), ChatMessage.of_text(Role.ASSISTANT, "ok" + answer)),
            )
            yield TextDeltaEvent(content="done" + answer)
            yield TurnEndEvent.from_counts(1, 1)

        async def close() -> None:
            bridge.close()

        return SessionRuntime(process=process, bridge=bridge, close=close)

    return open_runtime


@contextlib.asynccontextmanager
async def workers(
    client: Redis, store: RedisSessionStore, script: Script, count: int, *, visibility: float = 5.0
) -> AsyncIterator[list[RedisTurnWorker]]:
    made = [
        RedisTurnWorker(
            client,
            store,
            runtime_factory(script),
            keys=KEYS,
            concurrency=2,
            visibility_timeout_seconds=visibility,
            event_log_size=1000,
            poll_seconds=0.01,
        )
        for _ in range(count)
    ]
    tasks = [asyncio.create_task(worker.run()) for worker in made]
    try:
        yield made
    finally:
        for worker in made:
            worker.stop()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)


async def lines(log: RedisEventLog, session_id: str) -> list[dict[str, object]]:
    return [json.loads(e.line) for e in await log.read_after(session_id, None, wait_seconds=0)]


async def until(check: Callable[[], Awaitable[bool]], within: float = 30) -> None:
    """Poll ``check`` until it holds (a TimeoutError after ``within`` seconds)."""
    async with asyncio.timeout(within):
        while not await check():  # noqa: ASYNC110 - the state is in Redis: nothing to wait on here
            await asyncio.sleep(0.02)


async def wait_for_turn_ends(log: RedisEventLog, session_id: str, count: int, within: float = 30) -> None:
    async def ended() -> bool:
        return sum(e["type"] == "turn_end" for e in await lines(log, session_id)) >= count

    await until(ended, within)


async def started(script: Script, content: str) -> bool:
    return content in script.started


def hub_of(client: Redis, max_queued: int = 16) -> RedisTurnHub:
    return RedisTurnHub(client, max_queued_turns=max_queued, keys=KEYS)


# --- the hub ---------------------------------------------------------------------------------------------------------


async def test_a_full_session_queue_refuses_and_queues_nothing(client: Redis) -> None:
    hub = hub_of(client, max_queued=2)
    for n in range(3):  # one to run and two waiting
        await hub.submit("q", UserMessageRequest(content=str(n)))
    with pytest.raises(TurnQueueFullError) as refused:
        await hub.submit("q", UserMessageRequest(content="3"))
    assert refused.value.retry_after_seconds > 0
    assert await hub.load() == type(await hub.load())(running=0, queued=3)
    await hub.submit("other", UserMessageRequest(content="x"))  # other sessions are not affected


async def test_nothing_to_answer_or_cancel_without_turns(client: Redis) -> None:
    hub = hub_of(client)
    assert await hub.cancel("none") is False
    assert await hub.cancel("none", "no-such-turn") is False
    assert await hub.answer("none", HitlResponseRequest(approved=True)) is not None


# --- workers ---------------------------------------------------------------------------------------------------------


async def test_each_sessions_turns_run_in_order_across_two_workers(
    client: Redis, store: RedisSessionStore, events: RedisEventLog
) -> None:
    rng = random.Random(7)
    script = Script(delay=lambda: rng.random() * 0.02)
    hub = hub_of(client)
    sessions = [f"s{n}" for n in range(8)]
    async with workers(client, store, script, 2):
        for turn in range(5):
            for session in sessions:
                await hub.submit(session, UserMessageRequest(content=f"{session}-{turn}"))
        for session in sessions:
            await wait_for_turn_ends(events, session, 5)
    for session in sessions:
        logged = await lines(events, session)
        assert [e["type"] for e in logged].count("turn_end") == 5
        deltas = [e["content"] for e in logged if e["type"] == "text_delta" and "saw" in str(e["content"])]
        # turn k started after turn k-1 was stored: it saw 2k messages
        assert deltas == [f"{session}-{k} saw {2 * k}" for k in range(5)]
        history = await store.load_messages(session)
        assert [m.text for m in history if m.role == Role.USER] == [f"{session}-{k}" for k in range(5)]
    assert await hub.load() == type(await hub.load())(running=0, queued=0)


async def test_an_answer_reaches_the_worker_running_the_turn(
    client: Redis, store: RedisSessionStore, events: RedisEventLog
) -> None:
    hub = hub_of(client)
    async with workers(client, store, Script(ask_approval=True), 2):
        await hub.submit("a", UserMessageRequest(content="write it"))

        async def asked() -> bool:
            return any(e["type"] == "hitl_request" for e in await lines(events, "a"))

        await until(asked, 10)
        request = next(e for e in await lines(events, "a") if e["type"] == "hitl_request")
        assert await hub.answer("a", HitlResponseRequest(approved=True, id=str(request["id"]))) is None
        await wait_for_turn_ends(events, "a", 1)
        wrong = await hub.answer("a", HitlResponseRequest(approved=True))
    assert wrong is not None  # the turn is over
    assert [e["content"] for e in await lines(events, "a") if e["type"] == "text_delta"][-1] == "done approved=True"


async def test_cancel_stops_the_running_turn_and_a_waiting_one_never_runs(
    client: Redis, store: RedisSessionStore, events: RedisEventLog
) -> None:
    hang = asyncio.Event()
    script = Script(hang=hang)
    hub = hub_of(client)
    async with workers(client, store, script, 2):
        first = await hub.submit("c", UserMessageRequest(content="first"))
        second = await hub.submit("c", UserMessageRequest(content="second"))
        await until(lambda: started(script, "first"), 10)
        assert await hub.cancel("c", second) is True  # waiting: ends without running
        assert await hub.cancel("c") is True  # the running one
        await wait_for_turn_ends(events, "c", 2)
        assert await hub.cancel("c", first) is False
    assert script.started == ["first"]
    assert [e["type"] for e in await lines(events, "c")] == ["text_delta", "turn_end", "turn_end"]
    with pytest.raises(SessionNotFoundError):
        await store.load_messages("c")  # neither turn was recorded


async def test_a_turn_of_a_silent_worker_restarts_elsewhere_and_ends_once(
    client: Redis, store: RedisSessionStore, events: RedisEventLog
) -> None:
    hang = asyncio.Event()
    stalled = Script(hang=hang)
    hub = hub_of(client)
    silent = RedisTurnWorker(
        client, store, runtime_factory(stalled), keys=KEYS, concurrency=1, visibility_timeout_seconds=0.6,
        event_log_size=1000, poll_seconds=0.01,
    )  # fmt: skip
    run = asyncio.create_task(silent.run())
    turn = await hub.submit("r", UserMessageRequest(content="long"))
    await until(lambda: started(stalled, "long"), 10)
    run.cancel()  # the worker stops answering (its turn's agent stays stuck, as a hung process's would)
    with contextlib.suppress(asyncio.CancelledError):
        await run
    healthy = Script()
    async with workers(client, store, healthy, 1, visibility=0.6):
        await wait_for_turn_ends(events, "r", 1, within=20)
        hang.set()  # the stalled attempt wakes up and tries to write and finish
        await asyncio.sleep(0.5)
    logged = await lines(events, "r")
    assert [e["type"] for e in logged] == ["text_delta", "turn_restarted", "text_delta", "text_delta", "turn_end"]
    assert logged[1] == {"type": "turn_restarted", "turn_id": turn}
    assert [m.text for m in await store.load_messages("r")] == ["long", "ok"]


async def test_a_stopping_worker_hands_its_waiting_turns_over_at_once_and_finishes_the_running_one(
    client: Redis, store: RedisSessionStore, events: RedisEventLog
) -> None:
    hang = asyncio.Event()
    script = Script(hang=hang)
    hub = hub_of(client)
    leaving = RedisTurnWorker(
        client, store, runtime_factory(script), keys=KEYS, concurrency=2, visibility_timeout_seconds=30,
        event_log_size=1000, poll_seconds=0.01,
    )  # fmt: skip
    run = asyncio.create_task(leaving.run())
    await hub.submit("x", UserMessageRequest(content="running"))
    await hub.submit("x", UserMessageRequest(content="waiting behind it"))
    await until(lambda: started(script, "running"), 10)

    async def both_held() -> bool:
        return leaving.held == 2

    await until(both_held, 10)
    leaving.stop()
    async with workers(client, store, Script(), 1, visibility=30) as (taker,):

        async def taken_over() -> bool:
            held: Any = await client.xpending_range(KEYS.turns, "workers", "-", "+", 10, consumername=taker.consumer)
            return len(held) == 1

        await until(taken_over, 10)  # long before the 30 s visibility timeout
        assert not run.done()  # the running turn is still being finished
        hang.set()
        await asyncio.wait_for(run, 10)
        await wait_for_turn_ends(events, "x", 2, within=10)
    logged = await lines(events, "x")
    assert [e["type"] for e in logged] == [
        "text_delta",
        "text_delta",
        "turn_end",
        "text_delta",
        "text_delta",
        "turn_end",
    ]
    assert script.started == ["running"]  # the second turn ran on the other worker
    consumers = await client.xinfo_consumers(KEYS.turns, "workers")
    assert leaving.consumer not in {str(c["name"]) for c in consumers}  # it left the group holding nothing


@given(
    data=st.one_of(
        st.binary(max_size=64), st.text(max_size=64), st.dictionaries(st.text(max_size=8), st.text(max_size=8))
    )
)
def test_a_control_message_that_is_not_one_is_ignored(data: bytes | str | dict[str, str]) -> None:
    raw = json.dumps(data) if isinstance(data, dict) else data
    decoded = ControlMessage.decode(raw)
    assert decoded is None or decoded.kind in ("answer", "cancel", "done")


@given(
    session=st.text(max_size=20),
    kind=st.sampled_from(["answer", "cancel", "done"]),
    turn=st.none() | st.text(max_size=20),
    line=st.none() | st.text(max_size=40),
)
def test_control_messages_read_back_as_written(session: str, kind: str, turn: str | None, line: str | None) -> None:
    message = ControlMessage(session, kind, turn_id=turn, line=line)
    assert ControlMessage.decode(message.encode()) == message


async def test_a_silent_workers_turn_deep_in_the_pending_list_is_still_taken_over(
    client: Redis, store: RedisSessionStore, events: RedisEventLog
) -> None:
    hub = hub_of(client)
    for n in range(26):
        await hub.submit(f"deep{n}", UserMessageRequest(content=f"turn {n}"))
    delivered: Any = await client.xreadgroup("workers", "busy", {KEYS.turns: ">"}, count=26)
    ids: list[Any] = [entry_id for entry_id, _fields in delivered[0][1]]
    await client.xclaim(KEYS.turns, "workers", "silent", 0, ids[-1:])  # the last one's worker went silent

    async def keep_busy() -> None:  # a live worker keeps the first 25 entries fresh
        while True:
            await client.xclaim(KEYS.turns, "workers", "busy", 0, ids[:-1], justid=True)
            await asyncio.sleep(0.1)

    busy = asyncio.create_task(keep_busy())
    try:
        async with workers(client, store, Script(), 1, visibility=0.5):  # XAUTOCLAIM COUNT 2 looks at 20 per call
            await wait_for_turn_ends(events, "deep25", 1, within=15)
    finally:
        busy.cancel()
    assert [n for n in range(25) if await lines(events, f"deep{n}")] == []  # the fresh ones were left alone


async def test_an_entry_that_is_not_a_turn_is_dropped_and_the_turns_behind_it_run(
    client: Redis, store: RedisSessionStore, events: RedisEventLog
) -> None:
    hub = hub_of(client)
    await hub.submit("before", UserMessageRequest(content="first"))  # makes the stream and group
    await client.xadd(KEYS.turns, {"session_id": "j", "seq": "not a number"})
    await hub.submit("after", UserMessageRequest(content="second"))
    async with workers(client, store, Script(), 1):
        await wait_for_turn_ends(events, "after", 1)
    assert await client.xlen(KEYS.turns) == 0
    assert await lines(events, "j") == []
