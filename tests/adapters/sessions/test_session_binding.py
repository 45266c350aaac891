"""SessionBinding on a real store: a new session is stored with its first turn, and a client's id is checked first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptStep
from ironhive.adapters.sessions.execution_log import JsonlExecutionLog
from ironhive.adapters.sessions.store import DiskCacheSessionStore
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import ConfigurationError
from ironhive.domain.sessions import SessionBinding, SessionRequest, session_id_problem
from tests.support.fakes import FakeClock


@pytest.fixture
def store(tmp_path: Path) -> DiskCacheSessionStore:
    project = tmp_path / "project"
    project.mkdir()
    return DiskCacheSessionStore(tmp_path / "home" / ".ironhive", project)


@pytest.fixture
def loop() -> AgentLoop:
    return AgentLoop(ScriptedChatClient([ScriptStep(text="hello")]), clock=FakeClock())


async def open_binding(
    store: DiskCacheSessionStore, tmp_path: Path, request: SessionRequest, loop: AgentLoop | None = None
) -> SessionBinding:
    log = JsonlExecutionLog(tmp_path / "home" / ".ironhive" / "logs")
    agent = loop or AgentLoop(ScriptedChatClient([]), clock=FakeClock())
    return await SessionBinding.open(agent, request, model="m", store=store, log=log)


@pytest.mark.parametrize("session_id", [None, "client-chosen"])
async def test_a_new_session_is_stored_only_with_its_first_turn(
    store: DiskCacheSessionStore, tmp_path: Path, loop: AgentLoop, session_id: str | None
) -> None:
    binding = await open_binding(store, tmp_path, SessionRequest(session_id=session_id), loop)
    assert session_id is not None or re.fullmatch(r"[0-9a-f]+-[0-9a-f]{8}", binding.session_id)
    assert not binding.stored and await store.list(10) == []
    await binding.close("error")  # a run that failed before its first turn leaves nothing behind
    assert await store.list(10) == []
    turn = await loop.run("hi")
    await binding.record("hi", turn)
    [stored] = await store.list(10)
    assert (stored.id, stored.status, stored.message_count) == (binding.session_id, "active", 2)
    await binding.close("completed")
    assert (await store.get(binding.session_id)).status == "ended"


async def test_an_existing_session_id_is_resumed(store: DiskCacheSessionStore, tmp_path: Path) -> None:
    created = await store.create("m", session_id="kept")
    binding = await open_binding(store, tmp_path, SessionRequest(session_id="kept"))
    assert binding.stored and binding.session_id == created.id


@pytest.mark.parametrize("session_id", ["a/b", "..", "x" * 129, "", "-x", "a b", "ü"])
async def test_an_invalid_session_id_is_refused_before_the_store_is_touched(
    store: DiskCacheSessionStore, tmp_path: Path, session_id: str
) -> None:
    assert session_id_problem(session_id) is not None
    with pytest.raises(ConfigurationError, match="is not a valid session id") as raised:
        await open_binding(store, tmp_path, SessionRequest(session_id=session_id))
    assert str(tmp_path) not in str(raised.value)
    assert await store.list(10) == []


@pytest.mark.parametrize("session_id", ["a", "A1._-z", "0" * 128, "20260831-abc.def_1"])
def test_valid_session_ids(session_id: str) -> None:
    assert session_id_problem(session_id) is None


async def test_a_session_created_by_a_cancelled_record_is_not_created_twice(
    store: DiskCacheSessionStore, tmp_path: Path, loop: AgentLoop
) -> None:
    binding = await open_binding(store, tmp_path, SessionRequest(session_id="raced"), loop)
    await store.create("m", session_id="raced")  # what a record cancelled mid-create leaves behind
    await binding.record("hi", await loop.run("hi"))
    [stored] = await store.list(10)
    assert (stored.id, stored.message_count) == ("raced", 2)
