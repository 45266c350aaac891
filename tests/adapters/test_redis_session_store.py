"""RedisSessionStore and RedisExecutionLog against a real redis-server: the diskcache store's contract and more."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import tempfile
from collections.abc import AsyncIterator, Awaitable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import ConnectionError as RedisConnectionError

from ironhive.adapters.sessions.codec import SessionDataError
from ironhive.adapters.sessions.execution_log import JsonlExecutionLog
from ironhive.adapters.sessions.redis_store import (
    RedisExecutionLog,
    RedisKeys,
    RedisSessionStore,
    open_redis,
    project_key_for,
)
from ironhive.adapters.sessions.store import DiskCacheSessionStore, project_hash
from ironhive.domain.errors import ConfigurationError, SessionNotFoundError
from ironhive.ports.chat import ChatMessage, Role
from ironhive.ports.sessions import ExecutionLog, SessionInfo
from tests.adapters.sessions import test_diskcache_session_store as contract
from tests.adapters.sessions.conversation import CountingIds, text_turn, tool_turn
from tests.adapters.sessions.test_session_codec import messages as generated_messages
from tests.support.fakes import FakeClock
from tests.support.redis_server import RedisServer, redis_server

START = contract.START
PROJECT = "0123456789abcdef"

# The diskcache store's contract, run unchanged on this store (their `store` and `clock` are this module's fixtures).
test_it_is_a_session_store = contract.test_it_is_a_session_store
test_create_makes_an_active_empty_session_with_a_time_based_id = (
    contract.test_create_makes_an_active_empty_session_with_a_time_based_id
)
test_ids_sort_by_creation_time = contract.test_ids_sort_by_creation_time
test_appended_turns_load_back_in_order = contract.test_appended_turns_load_back_in_order
test_message_count_is_user_messages_plus_assistant_messages_with_text = (
    contract.test_message_count_is_user_messages_plus_assistant_messages_with_text
)
test_first_message_is_the_first_user_text_cut_to_100_characters = (
    contract.test_first_message_is_the_first_user_text_cut_to_100_characters
)
test_list_is_newest_first_and_honours_the_limit = contract.test_list_is_newest_first_and_honours_the_limit
test_latest_is_the_session_written_most_recently = contract.test_latest_is_the_session_written_most_recently
test_end_sets_the_status_from_the_reason = contract.test_end_sets_the_status_from_the_reason
test_end_with_an_unknown_reason_is_refused = contract.test_end_with_an_unknown_reason_is_refused
test_fork_copies_the_messages_and_ends_the_original = contract.test_fork_copies_the_messages_and_ends_the_original
test_unknown_sessions_raise_session_not_found = contract.test_unknown_sessions_raise_session_not_found


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
def clock() -> FakeClock:
    return FakeClock(start=START)


@pytest.fixture
def store(client: Redis, clock: FakeClock) -> RedisSessionStore:
    return RedisSessionStore(client, project_key=PROJECT, project_path="/p", clock=clock, ids=CountingIds())


async def all_keys(client: Redis) -> list[str]:
    return sorted([str(key) async for key in client.scan_iter()])


async def test_the_real_clock_and_ids_make_distinct_ids(client: Redis) -> None:
    store = RedisSessionStore(client, project_key=PROJECT)
    first, second = await store.create("m"), await store.create("m")
    assert first.id != second.id
    assert abs(first.created - datetime.now(UTC)) < timedelta(minutes=1)


async def test_another_client_reads_what_was_written(store: RedisSessionStore, server: RedisServer) -> None:
    session = await store.create("m")
    await store.append_turn(session.id, tool_turn())
    other = await open_redis(server.url)
    try:
        reopened = RedisSessionStore(other, project_key=PROJECT, clock=FakeClock(), ids=CountingIds())
        assert await reopened.load_messages(session.id) == tool_turn()
        assert await reopened.get(session.id) == await store.get(session.id)
    finally:
        await other.aclose()


async def test_reading_an_empty_project_writes_nothing(store: RedisSessionStore, client: Redis) -> None:
    assert await store.list(10) == []
    assert await store.latest() is None
    with pytest.raises(SessionNotFoundError):
        await store.get("nope")
    with pytest.raises(SessionNotFoundError):
        await store.fork("nope")
    with pytest.raises(SessionNotFoundError):
        await store.load_messages("nope")
    assert await store.delete("nope") is False
    assert await all_keys(client) == []


async def test_delete_leaves_no_key_of_the_session(store: RedisSessionStore, client: Redis) -> None:
    kept = await store.create("m")
    gone = await store.create("m")
    log = RedisExecutionLog(client, project_key=PROJECT)
    await log.turn_start(gone.id, 1, "hi")
    for turn in range(3):
        await store.append_turn(gone.id, tool_turn())
        assert await store.append_turn_once(gone.id, f"t{turn}", text_turn("q", "a"))
        await store.append_turn(kept.id, text_turn("q", "a"))
    assert await store.delete(gone.id) is True
    assert [key for key in await all_keys(client) if gone.id in key] == []
    assert gone.id not in await client.zrange(store.keys.by_creation, 0, -1)
    assert gone.id not in await client.zrange(store.keys.by_write, 0, -1)
    assert await store.delete(gone.id) is False
    assert [info.id for info in await store.list(10)] == [kept.id]
    assert (await store.latest()) == await store.get(kept.id)
    assert len(await store.load_messages(kept.id)) == 6


async def test_a_clock_with_another_offset_is_stored_as_utc(client: Redis) -> None:
    seoul = timezone(timedelta(hours=9))
    clock = FakeClock(start=datetime(2026, 9, 1, 9, 0, tzinfo=seoul))
    store = RedisSessionStore(client, project_key=PROJECT, clock=clock, ids=CountingIds())
    session = await store.create("m")
    assert session.created == datetime(2026, 9, 1, 0, 0, tzinfo=UTC)
    assert (await store.get(session.id)).created.utcoffset() == timedelta(0)
    assert session.id.startswith(f"{int(session.created.timestamp() * 1000):x}-")


async def test_projects_keep_their_sessions_apart(client: Redis, tmp_path: Path) -> None:
    first = RedisSessionStore.for_project(client, tmp_path / "one", clock=FakeClock(), ids=CountingIds())
    second = RedisSessionStore.for_project(client, tmp_path / "two", clock=FakeClock(), ids=CountingIds())
    mine = await first.create("m")  # the same id the second store would make: only the project tells them apart
    assert await second.list(10) == []
    assert await second.latest() is None
    with pytest.raises(SessionNotFoundError):
        await second.get(mine.id)
    assert await second.delete(mine.id) is False
    assert await first.get(mine.id) == mine


def test_the_project_key_is_the_diskcache_folder_hash_and_a_cluster_hash_tag(tmp_path: Path) -> None:
    assert project_key_for(tmp_path / "One") == project_hash(tmp_path / "one")
    keys = RedisKeys(project_key_for(tmp_path))
    assert keys.session("abc") == f"ironhive:{{{project_hash(tmp_path)}}}:session:abc"
    assert keys.messages("abc").endswith("}:messages:abc")
    for bad in ("", "a}b", "a{b", "a:b", "x" * 65):
        with pytest.raises(ValueError, match="project key"):
            RedisKeys(bad)


@pytest.mark.parametrize("tricky", ["a:messages", "{a}", "a:b:c", "sessions", "a b\n", "é"])
async def test_no_session_id_reaches_another_sessions_data(store: RedisSessionStore, tricky: str) -> None:
    plain = await store.create("m", session_id="a")
    await store.append_turn(plain.id, text_turn("plain", "one"))
    odd = await store.create("m", session_id=tricky)
    await store.append_turn(odd.id, text_turn("odd", "two"))
    assert await store.load_messages("a") == text_turn("plain", "one")
    assert await store.load_messages(tricky) == text_turn("odd", "two")
    assert await store.delete(tricky) is True
    assert await store.load_messages("a") == text_turn("plain", "one")


async def test_latest_and_list_pass_over_entries_whose_record_is_gone(store: RedisSessionStore, client: Redis) -> None:
    sessions = [await store.create("m") for _ in range(20)]
    # Records lost outside the store (an evicting maxmemory policy, a hand-made DEL) leave ids in the indexes.
    await client.delete(*(store.keys.session(session.id) for session in sessions[1:]))
    assert await store.latest() == sessions[0]
    assert await store.list(5) == [sessions[0]]
    await store.append_turn(sessions[0].id, text_turn("q", "a"))
    assert [info.id for info in await store.list(1)] == [sessions[0].id]


async def test_creating_an_existing_id_is_refused_and_keeps_the_session(store: RedisSessionStore) -> None:
    session = await store.create("m", session_id="fixed")
    await store.append_turn(session.id, text_turn("q", "a"))
    with pytest.raises(SessionDataError, match="already exists"):
        await store.create("other", session_id="fixed")
    assert (await store.get("fixed")).model == "m"
    assert await store.load_messages("fixed") == text_turn("q", "a")


async def test_an_empty_session_forks_and_the_fork_is_independent(store: RedisSessionStore) -> None:
    original = await store.create("m")
    forked = await store.fork(original.id)
    assert await store.load_messages(forked.id) == ()
    await store.append_turn(forked.id, text_turn("only here", "yes"))
    assert await store.load_messages(original.id) == ()
    assert (await store.latest()) == await store.get(forked.id)


async def test_a_fork_of_an_ended_session_is_active(store: RedisSessionStore) -> None:
    original = await store.create("m")
    await store.end(original.id, "error")
    forked = await store.fork(original.id)
    assert forked.status == "active"
    assert await store.get(forked.id) == forked
    assert (await store.get(original.id)).status == "forked"


async def test_a_record_of_an_unknown_format_is_a_clear_error(store: RedisSessionStore, client: Redis) -> None:
    session = await store.create("m")
    await client.hset(store.keys.session(session.id), "v", "9")
    with pytest.raises(SessionDataError, match="unsupported format"):
        await store.get(session.id)
    await client.hset(store.keys.session(session.id), mapping={"v": "1", "created": "yesterday"})
    with pytest.raises(SessionDataError, match="malformed"):
        await store.get(session.id)


async def test_a_turn_stored_before_parts_carried_provider_state_still_loads(
    store: RedisSessionStore, client: Redis
) -> None:
    session = await store.create("m")
    old = {"v": 1, "messages": [{"role": "assistant", "parts": [{"kind": "thinking", "text": "hmm"}]}]}
    await client.rpush(store.keys.messages(session.id), json.dumps(old))
    (message,) = await store.load_messages(session.id)
    assert message.role is Role.ASSISTANT
    assert message.parts[0].kind == "thinking"


async def test_two_clients_appending_to_one_session_lose_nothing(store: RedisSessionStore, server: RedisServer) -> None:
    session = await store.create("m")
    other = await open_redis(server.url)
    try:
        second = RedisSessionStore(other, project_key=PROJECT, clock=FakeClock(), ids=CountingIds())

        async def write(writer: RedisSessionStore, name: str) -> None:
            for index in range(40):
                await writer.append_turn(session.id, text_turn(f"{name}{index}", "ok"))

        await asyncio.gather(write(store, "a"), write(second, "b"))
    finally:
        await other.aclose()
    prompts = [message.text for message in await store.load_messages(session.id) if message.role is Role.USER]
    assert sorted(prompts) == sorted([f"a{index}" for index in range(40)] + [f"b{index}" for index in range(40)])
    assert [prompt for prompt in prompts if prompt.startswith("a")] == [f"a{index}" for index in range(40)]
    assert (await store.get(session.id)).message_count == 160


@contextlib.asynccontextmanager
async def reply_losing_proxy(socket: Path, markers: set[bytes]) -> AsyncIterator[str]:
    """A loopback TCP proxy to the server that, once per marker, passes a command holding it and then cuts the
    connection before the reply comes back: the command ran, the client cannot know and sends it again."""

    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(str(socket))
        cut = asyncio.Event()

        async def up() -> None:
            while (data := await client_reader.read(65536)) and not cut.is_set():
                if hit := next((marker for marker in markers if marker in data), None):
                    markers.discard(hit)
                    cut.set()
                upstream_writer.write(data)
                await upstream_writer.drain()

        async def down() -> None:
            while data := await upstream_reader.read(65536):
                if cut.is_set():
                    break  # the reply of the marked command: dropped with the connection
                client_writer.write(data)
                await client_writer.drain()

        pumps = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            client_writer.close()
            upstream_writer.close()

    listener = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"redis://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    finally:
        listener.close()
        await listener.wait_closed()


async def test_a_write_whose_reply_is_lost_is_never_sent_again(server: RedisServer, client: Redis) -> None:
    direct = RedisSessionStore(client, project_key=PROJECT)
    warm = await direct.create("m")  # every script known to the server, so a marked command is the script's run
    await direct.append_turn(warm.id, text_turn("q", "a"))
    await client.flushall()
    markers = {b"model-lost", b"prompt-lost", b"turn-lost"}
    async with reply_losing_proxy(server.socket, markers) as url:
        proxied = await open_redis(url)
        try:
            store = RedisSessionStore(proxied, project_key=PROJECT)
            with pytest.raises(RedisConnectionError):
                await store.create("model-lost")
            (session,) = await direct.list(10)
            assert session.model == "model-lost"
            with pytest.raises(RedisConnectionError):
                await store.append_turn(session.id, text_turn("prompt-lost", "a"))
            with pytest.raises(RedisConnectionError):
                await store.append_turn_once(session.id, "turn-lost", text_turn("q2", "a2"))
            # The caller cannot know whether a lost write happened: a turn written by id may simply be written again.
            assert await store.append_turn_once(session.id, "turn-lost", text_turn("q2", "a2")) is False
        finally:
            await proxied.aclose()
    assert markers == set()  # every marked command had its reply cut
    assert await direct.load_messages(session.id) == (*text_turn("prompt-lost", "a"), *text_turn("q2", "a2"))
    assert (await direct.get(session.id)).message_count == 4


async def test_append_turn_once_records_a_turn_and_its_extra_commands_exactly_once(
    store: RedisSessionStore, client: Redis, server: RedisServer
) -> None:
    session = await store.create("m")
    events = store.keys.of("events", session.id)
    done = store.keys.of("done", session.id)

    def also(pipe: Pipeline) -> None:
        pipe.xadd(events, {"line": '{"type":"turn_end"}'})
        pipe.incr(done)

    assert await store.append_turn_once(session.id, "turn-1", text_turn("q", "a"), also=also) is True
    assert await store.append_turn_once(session.id, "turn-1", text_turn("q", "a"), also=also) is False
    assert await store.append_turn_once(session.id, "turn-1", text_turn("q", "a")) is False
    # A reclaimed turn finishing twice at once, from two workers: one wins.
    other = await open_redis(server.url)
    try:
        second = RedisSessionStore(other, project_key=PROJECT)
        outcomes = await asyncio.gather(
            *(
                writer.append_turn_once(session.id, "turn-2", text_turn("q2", "a2"), also=also)
                for writer in (store, second, store, second)
            )
        )
    finally:
        await other.aclose()
    assert sorted(outcomes) == [False, False, False, True]
    assert await store.load_messages(session.id) == (*text_turn("q", "a"), *text_turn("q2", "a2"))
    assert await client.xlen(events) == 2
    assert await client.get(done) == "2"
    assert (await store.get(session.id)).message_count == 4


async def test_append_turn_once_of_an_unknown_session_runs_nothing(store: RedisSessionStore, client: Redis) -> None:
    ran: list[str] = []
    with pytest.raises(SessionNotFoundError, match="Session not found: nope"):
        await store.append_turn_once("nope", "t", text_turn("q", "a"), also=lambda pipe: ran.append("also"))
    with pytest.raises(SessionNotFoundError):
        await store.append_turn_once("nope", "t", text_turn("q", "a"))
    assert ran == []
    assert await all_keys(client) == []
    with pytest.raises(ValueError, match="turn id"):
        await store.append_turn_once("nope", "", text_turn("q", "a"))


async def test_extra_commands_that_fail_to_queue_write_nothing(store: RedisSessionStore) -> None:
    session = await store.create("m")

    def broken(pipe: Pipeline) -> None:
        raise RuntimeError("the caller's bug")

    with pytest.raises(RuntimeError, match="caller's bug"):
        await store.append_turn_once(session.id, "t", text_turn("q", "a"), also=broken)
    assert await store.load_messages(session.id) == ()
    assert await store.append_turn_once(session.id, "t", text_turn("q", "a")) is True


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://alice:hunter2-secret@127.0.0.1:1/0", "redis://***:***@127.0.0.1:1/0"),
        ("unix:///nonexistent/ironhive/redis.sock?password=hunter2-secret", "password=***"),
    ],
)
async def test_an_unreachable_server_is_a_configuration_error_naming_the_masked_url(url: str, shown: str) -> None:
    with pytest.raises(ConfigurationError, match="Cannot connect to Redis") as caught:
        await open_redis(url)
    assert shown in str(caught.value)
    assert "hunter2" not in str(caught.value)


async def test_a_server_that_never_answers_is_a_configuration_error_in_time() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # accept, read, never answer
        writer.close()

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        started = asyncio.get_running_loop().time()
        with pytest.raises(ConfigurationError, match=f"Cannot connect to Redis at redis://127.0.0.1:{port}"):
            await open_redis(f"redis://127.0.0.1:{port}", connect_timeout=0.3)
        assert asyncio.get_running_loop().time() - started < 5
    finally:
        listener.close()
        await listener.wait_closed()


@pytest.mark.parametrize(
    ("policy", "maxmemory", "refused"),
    [("allkeys-lru", "100mb", True), ("allkeys-random", "1gb", True), ("allkeys-lru", "0", False),
     ("volatile-lru", "100mb", False), ("noeviction", "100mb", False)],
)  # fmt: skip
async def test_a_server_that_may_evict_sessions_is_refused(
    server: RedisServer, client: Redis, policy: str, maxmemory: str, refused: bool
) -> None:
    await client.config_set("maxmemory-policy", policy)
    await client.config_set("maxmemory", maxmemory)
    try:
        if refused:
            with pytest.raises(ConfigurationError, match=f"maxmemory-policy {policy}"):
                await open_redis(server.url)
        else:
            await (await open_redis(server.url)).aclose()
    finally:
        await client.config_set("maxmemory-policy", "noeviction")
        await client.config_set("maxmemory", "0")


async def test_a_url_that_is_not_redis_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="Not a Redis URL: http://"):
        await open_redis("http://127.0.0.1:1/")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(st.lists(generated_messages, max_size=4), min_size=1, max_size=3))
async def test_generated_turns_round_trip(store: RedisSessionStore, turns: list[list[ChatMessage]]) -> None:
    session = await store.create("m")  # a new session per example: the fixture's store outlives the examples
    for turn in turns:
        await store.append_turn(session.id, turn)
    assert await store.load_messages(session.id) == tuple(message for turn in turns for message in turn)
    forked = await store.fork(session.id)
    assert await store.load_messages(forked.id) == await store.load_messages(session.id)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.sampled_from(["gpt-4o", "other"])),
        st.tuples(st.just("create_as"), st.integers(0, 99)),
        st.tuples(st.just("append"), st.integers(0, 99), st.lists(generated_messages, max_size=3)),
        st.tuples(st.just("end"), st.integers(0, 99), st.sampled_from(["user_exit", "completed", "error", "forked"])),
        st.tuples(st.just("fork"), st.integers(0, 99)),
        st.tuples(st.just("delete"), st.integers(0, 99)),
        st.tuples(st.just("advance"), st.integers(0, 2000)),
    ),
    max_size=14,
)
_projects = itertools.count()


async def outcome(call: Awaitable[object]) -> tuple[str, object]:
    try:
        return ("ok", await call)
    except (SessionNotFoundError, SessionDataError) as error:
        return (type(error).__name__, str(error))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=operations)
async def test_both_stores_agree_on_generated_operations(client: Redis, steps: list[tuple[Any, ...]]) -> None:
    clock = FakeClock(start=START)
    with tempfile.TemporaryDirectory() as folder:
        disk = DiskCacheSessionStore(Path(folder), Path(folder) / "project", clock=clock, ids=CountingIds())
        redis = RedisSessionStore(client, project_key=f"equal-{next(_projects)}", clock=clock, ids=CountingIds())
        ids: list[str] = []

        def target(index: int) -> str:
            return [*ids, "nope"][index % (len(ids) + 1)]

        for step in steps:
            match step:
                case ("advance", milliseconds):
                    clock.advance(milliseconds / 1000)
                    continue
                case ("create", model):
                    results = [await outcome(store.create(model)) for store in (disk, redis)]
                case ("create_as", index):
                    results = [await outcome(store.create("m", target(index))) for store in (disk, redis)]
                case ("append", index, messages):
                    results = [await outcome(store.append_turn(target(index), messages)) for store in (disk, redis)]
                case ("end", index, reason):
                    results = [await outcome(store.end(target(index), reason)) for store in (disk, redis)]
                case ("fork", index):
                    results = [await outcome(store.fork(target(index))) for store in (disk, redis)]
                case ("delete", index):
                    results = [await outcome(store.delete(target(index))) for store in (disk, redis)]
            assert results[0] == results[1], step
            if isinstance(made := results[0][1], SessionInfo) and made.id not in ids:
                ids.append(made.id)
        for session_id in [*ids, "nope"]:
            assert await outcome(disk.get(session_id)) == await outcome(redis.get(session_id))
            assert await outcome(disk.load_messages(session_id)) == await outcome(redis.load_messages(session_id))
        assert await disk.list(100) == await redis.list(100)
        assert await disk.latest() == await redis.latest()


async def test_the_execution_log_writes_the_jsonl_logs_entries(client: Redis, tmp_path: Path) -> None:
    clock = FakeClock(start=START)
    log = RedisExecutionLog(client, project_key=PROJECT, clock=clock)
    jsonl = JsonlExecutionLog(tmp_path / "logs", clock=clock)
    assert isinstance(log, ExecutionLog)
    for target in (log, jsonl):
        await target.turn_start("s-1", 1, "see https://user:pw@example.com/x " + "y" * 600)
        await target.tool_call("s-1", 1, 1, "c1", "fetch", {"url": "https://a:b@h/", "apiKey": "sk-0123456789"})
        await target.tool_call("s-1", 1, 2, "c2", "read", '{"path": ')
        await target.tool_call("s-1", 1, 3, "c3", "noop", None)
        await target.turn_end("s-1", 1, response_length=3, tool_calls=3, input_tokens=None, output_tokens=7)
    lines = jsonl.path_for("s-1").read_text(encoding="utf-8").splitlines()
    assert await log.entries("s-1") == [json.loads(line) for line in lines]
    assert await log.entries("other") == []


async def test_the_execution_log_keeps_the_newest_entries(client: Redis) -> None:
    log = RedisExecutionLog(client, project_key=PROJECT, clock=FakeClock(), limit=5)
    for turn in range(20):
        await log.turn_start("s", turn, f"p{turn}")
    assert [entry["prompt"] for entry in await log.entries("s")] == ["p15", "p16", "p17", "p18", "p19"]
    with pytest.raises(ValueError, match="at least one"):
        RedisExecutionLog(client, project_key=PROJECT, limit=0)
