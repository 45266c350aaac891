"""runtime_factory on the scripted provider behind an EmbeddedTurnHub: approvals, stored history, bad input."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ironhive.adapters.config.schema import IronHiveConfig
from ironhive.adapters.serve.embedded_hub import EmbeddedTurnHub
from ironhive.adapters.serve.hub import OpenRuntime
from ironhive.adapters.serve.memory_log import MemoryEventLog
from ironhive.container import IronHiveContainer
from ironhive.domain.errors import ConfigurationError
from ironhive.protocol.models import HitlResponseRequest, UserMessageRequest
from ironhive.serve.runtime import open_plugin_tools, runtime_factory
from tests.adapters.test_serve_embedded_hub import events_until, events_until_type, kinds, texts


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    project = tmp_path / "work"
    project.mkdir()
    return project


def factory(work: Path, model: str | None = None) -> OpenRuntime:
    return runtime_factory(
        IronHiveConfig(), project=work, provider="scripted", model=model, approval_timeout_seconds=5.0
    )


@pytest.fixture
def log() -> MemoryEventLog:
    return MemoryEventLog(limit_per_session=1000, max_sessions=10)


@contextlib.asynccontextmanager
async def hub_for(open_runtime: OpenRuntime, log: MemoryEventLog) -> AsyncIterator[EmbeddedTurnHub]:
    hub = EmbeddedTurnHub(open_runtime, log, max_concurrent_turns=2, max_queued_turns=4, max_live_sessions=4)
    try:
        yield hub
    finally:
        await hub.aclose()


async def test_an_approval_goes_out_and_its_answer_comes_back(work: Path, log: MemoryEventLog) -> None:
    script = work.parent / "script.json"
    call = {"name": "write_file", "arguments": {"path": "notes.md", "content": "# Notes\n"}, "id": "call_w1"}
    script.write_text(json.dumps({"steps": [{"tool_calls": [call]}, {"text": "written"}]}))
    async with hub_for(factory(work, str(script)), log) as hub:
        await hub.submit("s1", UserMessageRequest(content="write the notes"))
        request = (await events_until_type(log, "s1", "hitl_request", seconds=30))[-1]
        assert request["tool_name"] == "write_file"
        assert await hub.answer("s1", HitlResponseRequest(approved=True, id=str(request["id"]))) is None
        events = await events_until(log, "s1", 1, seconds=30)
        assert [e for e in kinds(events) if e in ("tool_start", "tool_end", "turn_end")] == [
            "tool_start",
            "tool_end",
            "turn_end",
        ]
        assert next(e for e in events if e["type"] == "tool_end")["success"] is True
        assert "".join(str(t) for t in texts(events)) == "written"
    assert (work / "notes.md").read_text() == "# Notes\n"


async def test_a_session_is_stored_and_restored_when_its_agent_is_opened_again(work: Path, log: MemoryEventLog) -> None:
    async with hub_for(factory(work), log) as hub:
        await hub.submit("chat-1", UserMessageRequest(content="first"))
        await events_until(log, "chat-1", 1, seconds=30)
        await hub.drop("chat-1")  # the agent is released; the session stays stored
        await hub.submit("chat-1", UserMessageRequest(content="second"))
        await events_until(log, "chat-1", 2, seconds=30)
    store = IronHiveContainer().override(working_directory=work).session_store()
    messages = await store.load_messages("chat-1")
    user_texts = [m.text for m in messages if m.role == "user"]
    assert user_texts == ["first", "second"]


async def test_an_invalid_session_id_ends_its_turn_with_an_error(work: Path, log: MemoryEventLog) -> None:
    async with hub_for(factory(work), log) as hub:
        await hub.submit("../escape", UserMessageRequest(content="hello"))
        events = await events_until(log, "../escape", 1, seconds=30)
        assert kinds(events) == ["error", "turn_end"]
        assert "Session id" in str(events[0]["message"])


def test_a_provider_that_cannot_be_used_stops_the_factory_at_once(work: Path) -> None:
    with pytest.raises(ConfigurationError):
        runtime_factory(
            IronHiveConfig(), project=work, provider="no-such-provider", model=None, approval_timeout_seconds=None
        )


async def test_without_a_plugin_file_no_plugin_tools_start(work: Path) -> None:
    async with open_plugin_tools(work) as tools:
        assert tools == ()
