"""DiskCacheSessionStore: create, append, load, list, latest, end, delete, fork and get, on a real diskcache store."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import diskcache  # type: ignore[import-untyped]
import pytest

from ironhive.adapters.sessions.store import DiskCacheSessionStore, project_directory, project_hash
from ironhive.domain.errors import SessionNotFoundError
from ironhive.ports.chat import ChatMessage, Role, ToolCallPart, ToolResultPart
from ironhive.ports.sessions import EndReason, SessionStatus, SessionStore
from tests.adapters.sessions.conversation import CountingIds, text_turn, tool_turn
from tests.support.fakes import FakeClock

START = datetime(2026, 8, 31, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=START)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "Project"
    folder.mkdir()
    return folder


@pytest.fixture
def store(tmp_path: Path, project: Path, clock: FakeClock) -> DiskCacheSessionStore:
    return DiskCacheSessionStore(tmp_path / "home" / ".ironhive", project, clock=clock, ids=CountingIds())


async def test_it_is_a_session_store(store: DiskCacheSessionStore) -> None:
    assert isinstance(store, SessionStore)


async def test_create_makes_an_active_empty_session_with_a_time_based_id(store: DiskCacheSessionStore) -> None:
    created = await store.create("gpt-4o")
    milliseconds = int(START.timestamp() * 1000)
    assert created.id == f"{milliseconds:x}-00000001"
    assert created.status == "active"
    assert created.model == "gpt-4o"
    assert created.created == START
    assert created.message_count == 0
    assert created.first_message is None
    assert await store.get(created.id) == created
    assert await store.load_messages(created.id) == ()


async def test_ids_sort_by_creation_time(store: DiskCacheSessionStore, clock: FakeClock) -> None:
    ids = []
    for step in (0.001, 0.5, 3600, 86400 * 400, 0.001):
        clock.advance(step)
        ids.append((await store.create("m")).id)
    assert all(re.fullmatch(r"[0-9a-f]+-[0-9a-f]{8}", session_id) for session_id in ids)
    assert sorted(ids) == ids


async def test_the_real_clock_and_ids_make_distinct_ids(tmp_path: Path, project: Path) -> None:
    store = DiskCacheSessionStore(tmp_path / "base", project)
    first, second = await store.create("m"), await store.create("m")
    assert first.id != second.id
    assert abs(first.created - datetime.now(UTC)) < timedelta(minutes=1)


async def test_appended_turns_load_back_in_order(store: DiskCacheSessionStore) -> None:
    session = await store.create("m")
    await store.append_turn(session.id, tool_turn())
    await store.append_turn(session.id, text_turn("And now?", "Done."))
    assert await store.load_messages(session.id) == (*tool_turn(), *text_turn("And now?", "Done."))


async def test_another_store_instance_reads_what_was_written(
    store: DiskCacheSessionStore, tmp_path: Path, project: Path
) -> None:
    session = await store.create("m")
    await store.append_turn(session.id, tool_turn())
    reopened = DiskCacheSessionStore(tmp_path / "home" / ".ironhive", project, clock=FakeClock(), ids=CountingIds())
    assert await reopened.load_messages(session.id) == tool_turn()
    assert await reopened.get(session.id) == await store.get(session.id)


async def test_message_count_is_user_messages_plus_assistant_messages_with_text(store: DiskCacheSessionStore) -> None:
    session = await store.create("m")
    await store.append_turn(session.id, tool_turn())  # user + assistant(text, calls) + 2 tool + assistant(text)
    assert (await store.get(session.id)).message_count == 3
    calls_only = (
        ChatMessage.of_text(Role.USER, "again"),
        ChatMessage(role=Role.ASSISTANT, parts=(ToolCallPart(call_id="c", name="t", arguments={}),)),
        ChatMessage(role=Role.TOOL, parts=(ToolResultPart(call_id="c", name="t", result="ok", success=True),)),
        ChatMessage.of_text(Role.ASSISTANT, "fine"),
    )
    await store.append_turn(session.id, calls_only)
    assert (await store.get(session.id)).message_count == 5


async def test_first_message_is_the_first_user_text_cut_to_100_characters(store: DiskCacheSessionStore) -> None:
    session = await store.create("m")
    await store.append_turn(session.id, (ChatMessage.of_text(Role.SYSTEM, "system text"),))
    assert (await store.get(session.id)).first_message is None
    long_prompt = "x" * 99 + "yz" + " tail"
    await store.append_turn(session.id, (ChatMessage(role=Role.USER), *text_turn(long_prompt, "ok")))
    assert (await store.get(session.id)).first_message == "x" * 99 + "y"
    await store.append_turn(session.id, text_turn("later", "ok"))
    assert (await store.get(session.id)).first_message == "x" * 99 + "y"


async def test_list_is_newest_first_and_honours_the_limit(store: DiskCacheSessionStore, clock: FakeClock) -> None:
    created = []
    for model in ("a", "b", "c"):
        created.append(await store.create(model))
        clock.advance(1)
    await store.append_turn(created[0].id, text_turn("touch the oldest", "ok"))
    assert [info.id for info in await store.list(10)] == [created[2].id, created[1].id, created[0].id]
    assert [info.model for info in await store.list(2)] == ["c", "b"]
    assert await store.list(0) == []


async def test_list_and_latest_of_a_project_without_sessions(store: DiskCacheSessionStore) -> None:
    assert await store.list(10) == []
    assert await store.latest() is None
    assert not store.directory.exists()  # reading never creates the store


async def test_latest_is_the_session_written_most_recently(store: DiskCacheSessionStore) -> None:
    # The fake clock never moves: only the order of writes can tell them apart.
    first = await store.create("m")
    second = await store.create("m")
    assert (await store.latest()) == await store.get(second.id)
    await store.append_turn(first.id, text_turn("hi", "hello"))
    assert (await store.latest()) == await store.get(first.id)
    await store.end(second.id, "completed")
    assert (await store.latest()) == await store.get(second.id)


@pytest.mark.parametrize(
    ("reason", "status"),
    [("user_exit", "ended"), ("completed", "ended"), ("error", "error"), ("forked", "forked")],
)
async def test_end_sets_the_status_from_the_reason(
    store: DiskCacheSessionStore, clock: FakeClock, reason: EndReason, status: SessionStatus
) -> None:
    session = await store.create("m")
    clock.advance(5)
    await store.end(session.id, reason)
    ended = await store.get(session.id)
    assert ended.status == status
    assert ended.updated == START + timedelta(seconds=5)
    assert ended.created == START


async def test_end_with_an_unknown_reason_is_refused(store: DiskCacheSessionStore) -> None:
    session = await store.create("m")
    with pytest.raises(ValueError, match="end reason"):
        await store.end(session.id, "vanished")  # type: ignore[arg-type]
    assert (await store.get(session.id)).status == "active"


async def test_delete_removes_the_session_and_all_its_turns(store: DiskCacheSessionStore) -> None:
    kept = await store.create("m")
    gone = await store.create("m")
    for _ in range(3):
        await store.append_turn(gone.id, tool_turn())
        await store.append_turn(kept.id, text_turn("q", "a"))
    assert await store.delete(gone.id) is True
    assert [info.id for info in await store.list(10)] == [kept.id]
    with pytest.raises(SessionNotFoundError):
        await store.get(gone.id)
    with pytest.raises(SessionNotFoundError):
        await store.load_messages(gone.id)
    assert await store.delete(gone.id) is False
    with diskcache.Cache(str(store.directory)) as cache:
        leftovers = [key for key in cache.iterkeys() if gone.id in str(key)]
    assert leftovers == []
    assert len(await store.load_messages(kept.id)) == 6


async def test_fork_copies_the_messages_and_ends_the_original(store: DiskCacheSessionStore, clock: FakeClock) -> None:
    original = await store.create("gpt-4o")
    await store.append_turn(original.id, tool_turn())
    await store.append_turn(original.id, text_turn("more", "sure"))
    clock.advance(2)
    forked = await store.fork(original.id)
    assert forked.id != original.id
    assert forked.forked_from == original.id
    assert forked.status == "active"
    assert forked.model == "gpt-4o"
    assert forked.created == START + timedelta(seconds=2)
    assert forked.message_count == 5
    assert forked.first_message == "List the files, please."
    assert await store.load_messages(forked.id) == await store.load_messages(original.id)
    assert (await store.get(original.id)).status == "forked"
    assert await store.get(forked.id) == forked
    await store.append_turn(forked.id, text_turn("only in the fork", "yes"))
    assert len(await store.load_messages(forked.id)) == len(await store.load_messages(original.id)) + 2


async def test_unknown_sessions_raise_session_not_found(store: DiskCacheSessionStore) -> None:
    await store.create("m")  # the store exists; the id does not
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: store.get("nope"),
        lambda: store.load_messages("nope"),
        lambda: store.append_turn("nope", text_turn("q", "a")),
        lambda: store.end("nope", "completed"),
        lambda: store.fork("nope"),
    ]
    for call in calls:
        with pytest.raises(SessionNotFoundError, match="Session not found: nope"):
            await call()
    assert await store.delete("nope") is False


async def test_unknown_sessions_raise_before_the_store_exists(store: DiskCacheSessionStore) -> None:
    with pytest.raises(SessionNotFoundError):
        await store.get("nope")
    with pytest.raises(SessionNotFoundError):
        await store.fork("nope")
    assert await store.delete("nope") is False
    assert not store.directory.exists()


async def test_a_clock_with_another_offset_is_stored_as_utc(tmp_path: Path, project: Path) -> None:
    seoul = timezone(timedelta(hours=9))
    store = DiskCacheSessionStore(
        tmp_path / "b", project, clock=FakeClock(start=datetime(2026, 9, 1, 9, 0, tzinfo=seoul)), ids=CountingIds()
    )
    session = await store.create("m")
    assert session.created == datetime(2026, 9, 1, 0, 0, tzinfo=UTC)
    assert session.created.utcoffset() == timedelta(0)
    assert session.id.startswith(f"{int(session.created.timestamp() * 1000):x}-")


def test_project_hash_is_the_sha256_of_the_lower_cased_resolved_path(tmp_path: Path) -> None:
    path = tmp_path / "My Project"
    expected = hashlib.sha256(str(path.resolve()).lower().encode()).hexdigest()[:16]
    assert project_hash(path) == expected
    assert project_hash(tmp_path / "MY PROJECT") == project_hash(tmp_path / "my project") == expected
    assert re.fullmatch(r"[0-9a-f]{16}", expected)
    assert project_directory(tmp_path / "base", path) == tmp_path / "base" / "projects" / expected


def test_project_hash_resolves_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    assert project_hash(Path("work")) == project_hash(tmp_path / "work")
    assert project_hash(Path("work/../work")) == project_hash(tmp_path / "work")
    assert project_hash(tmp_path / "other") != project_hash(tmp_path / "work")


async def test_projects_keep_their_sessions_apart(tmp_path: Path) -> None:
    base = tmp_path / "base"
    first = DiskCacheSessionStore(base, tmp_path / "one", clock=FakeClock(), ids=CountingIds())
    second = DiskCacheSessionStore(base, tmp_path / "two", clock=FakeClock(), ids=CountingIds(100))
    mine = await first.create("m")
    assert await second.list(10) == []
    with pytest.raises(SessionNotFoundError):
        await second.get(mine.id)
    assert first.directory != second.directory
