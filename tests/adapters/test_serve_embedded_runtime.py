"""runtime_factory behind an EmbeddedTurnHub (approvals, stored history, bad input) and its shared provider clients."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ironhive.adapters.config.schema import IronHiveConfig
from ironhive.adapters.serve.embedded_hub import EmbeddedTurnHub
from ironhive.adapters.serve.hub import OpenRuntime
from ironhive.adapters.serve.memory_log import MemoryEventLog
from ironhive.container import IronHiveContainer
from ironhive.domain.errors import ConfigurationError
from ironhive.protocol.models import HitlResponseRequest, ServerEvent, TextDeltaEvent, UserMessageRequest
from ironhive.serve.runtime import SessionRuntimes, open_plugin_tools, runtime_factory
from tests.adapters.test_serve_embedded_hub import events_until, events_until_type, kinds, texts
from tests.support.openai_server import LoopbackOpenAIServer


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


class ConnectionCounter:
    """A TCP relay on loopback in front of a server that counts the connections it accepts."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.accepted = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> ConnectionCounter:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))


async def one_turn(runtimes: SessionRuntimes, session_id: str, text: str) -> list[ServerEvent]:
    runtime = await runtimes(session_id)
    try:
        return [event async for event in runtime.process(UserMessageRequest(content=text))]
    finally:
        await runtime.close()


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(st.sampled_from(["a", "b", "c"]), min_size=2, max_size=6))
async def test_remote_provider_clients_are_shared_by_every_session_and_turn(work: Path, turns: list[str]) -> None:
    # Each turn opens and closes its own agent (as the worker does); the provider's connection outlives them all.
    prefix = uuid.uuid4().hex[:8]  # the examples share the project's store
    with LoopbackOpenAIServer() as model:
        for _ in turns:
            model.enqueue_text("ok", usage=(3, 1))
        address = urlsplit(model.base_url)
        async with ConnectionCounter(address.port or 0) as counter:
            base_url = address._replace(netloc=f"127.0.0.1:{counter.port}").geturl()
            config = IronHiveConfig.model_validate(
                {"openai": {"apiKey": "sk-loopback-test", "model": "gpt-test", "endpoint": base_url}}
            )
            runtimes = runtime_factory(
                config, project=work, provider="openai", model=None, approval_timeout_seconds=5.0
            )
            try:
                for number, session in enumerate(turns):
                    events = await one_turn(runtimes, f"{prefix}-{session}", f"turn {number}")
                    assert [e.type for e in events if e.type in ("error", "turn_end")] == ["turn_end"], events
            finally:
                await runtimes.aclose()
            assert counter.accepted == 1
    store = IronHiveContainer().override(working_directory=work).session_store()
    for session in set(turns):
        messages = await store.load_messages(f"{prefix}-{session}")
        assert [m.text for m in messages if m.role == "user"] == [
            f"turn {number}" for number, name in enumerate(turns) if name == session
        ]


async def test_a_scripted_provider_gets_its_own_client_per_agent(work: Path) -> None:
    # A script is consumed as it answers: every session's agent starts at its first step.
    script = work.parent / "script.json"
    script.write_text(json.dumps({"steps": [{"text": "first step"}, {"text": "second step"}]}))
    runtimes = factory(work, str(script))
    for session in ("one", "two", "three"):
        events = await one_turn(runtimes, session, "hello")
        assert "".join(e.content for e in events if isinstance(e, TextDeltaEvent)) == "first step"
    await runtimes.aclose()
