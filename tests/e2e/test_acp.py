"""``ironhive acp`` end to end: the real process driven by the official ACP SDK's client side (spawn_agent_process)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from acp import PROTOCOL_VERSION, Client, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
    WriteTextFileResponse,
)

from tests.support.cli import clean_environment, ironhive_executable
from tests.support.openai_server import LoopbackOpenAIServer
from tests.support.server_process import openai_environment

TIMEOUT = 30.0


@dataclass
class RecordingClient:
    """An editor: records every update, answers permission requests from a queue of option ids."""

    answers: list[str | None] = field(default_factory=list)
    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = field(default_factory=list)
    asked_event: asyncio.Event = field(default_factory=asyncio.Event)
    hold: asyncio.Event | None = None  # when set up, permission answers wait for it
    buffers: dict[str, str] = field(default_factory=dict)  # the editor's open buffers, by absolute path
    reads: list[tuple[str, int | None, int | None]] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)  # write_text_file calls: path, content

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        self.reads.append((path, line, limit))
        lines = self.buffers[path].splitlines(keepends=True)
        start = (line or 1) - 1
        return ReadTextFileResponse(content="".join(lines[start : None if limit is None else start + limit]))

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        self.asked_event.set()
        if self.hold is not None:
            await self.hold.wait()
        answer = self.answers.pop(0) if self.answers else None
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    def of(self, kind: type) -> list[Any]:
        return [update for _, update in self.updates if isinstance(update, kind)]

    def text(self) -> str:
        return "".join(update.content.text for update in self.of(AgentMessageChunk))


@dataclass
class Editor:
    conn: ClientSideConnection
    client: RecordingClient
    process: asyncio.subprocess.Process
    incoming: list[dict[str, Any]]
    stderr: Path


@contextlib.asynccontextmanager
async def editor(
    work: Path,
    *args: str,
    env: dict[str, str] | None = None,
    client: RecordingClient | None = None,
    capabilities: ClientCapabilities | None = None,
) -> AsyncIterator[Editor]:
    """The real ``ironhive acp`` spawned by the SDK's client side, initialized."""
    client = client or RecordingClient()
    incoming: list[dict[str, Any]] = []

    def observe(event: StreamEvent) -> None:
        if event.direction is StreamDirection.INCOMING:
            incoming.append(event.message)

    stderr = work.parent / "stderr.log"
    with stderr.open("ab") as log:
        async with spawn_agent_process(
            cast(Client, client),  # the SDK routes the methods a client has; an editor without a terminal is valid
            ironhive_executable(),
            "acp",
            *args,
            env=clean_environment(work.parent / "home", env),
            cwd=work,
            transport_kwargs={"stderr": log.fileno()},
            observers=[observe],
        ) as (conn, process):
            try:
                initialized = await asyncio.wait_for(
                    conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities), TIMEOUT
                )
            except ConnectionError as error:
                raise AssertionError(f"ironhive acp did not start: {stderr.read_text()}") from error
            assert initialized.protocol_version == PROTOCOL_VERSION
            yield Editor(conn, client, process, incoming, stderr)
    assert "Traceback" not in stderr.read_text(), stderr.read_text()


def scripted(work: Path, steps: Sequence[object]) -> tuple[str, ...]:
    script = work.parent / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    return ("--provider", "scripted", "-m", str(script))


def shell_call(call_id: str, command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "execute_command", "arguments": {"command": command}, "id": call_id}]}


async def prompt(ed: Editor, session_id: str, text: str) -> str:
    response = await asyncio.wait_for(ed.conn.prompt(session_id=session_id, prompt=[text_block(text)]), TIMEOUT)
    return response.stop_reason


@pytest.fixture
def model() -> Any:
    with LoopbackOpenAIServer() as server:
        yield server


async def test_initialize_declares_what_ironhive_does(work: Path) -> None:
    async with editor(work, *scripted(work, [{"text": "hi"}])) as ed:
        answer = await ed.conn.initialize(protocol_version=PROTOCOL_VERSION)
    capabilities = answer.agent_capabilities
    assert capabilities is not None and capabilities.load_session is True
    assert capabilities.prompt_capabilities is not None
    assert capabilities.prompt_capabilities.image is False and capabilities.prompt_capabilities.embedded_context
    assert answer.agent_info is not None and answer.agent_info.name == "ironhive"


async def test_plain_prompt_streams_chunks_and_thoughts_from_an_openai_compatible_server(
    work: Path, model: LoopbackOpenAIServer
) -> None:
    model.enqueue_text("Hello from ironhive.", chunks=["Hello ", "from ", "ironhive."], reasoning=["Thinking it over."])
    async with editor(work, env=openai_environment(model.base_url)) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "default"
        assert await prompt(ed, session.session_id, "say hello") == "end_turn"
    chunks = [update.content.text for update in ed.client.of(AgentMessageChunk)]
    assert chunks == ["Hello ", "from ", "ironhive."]
    assert "".join(update.content.text for update in ed.client.of(AgentThoughtChunk)) == "Thinking it over."
    assert model.requests[0]["messages"][-1] == {"role": "user", "content": "say hello"}


async def test_tool_round_asks_permission_allow_once_then_reject(work: Path) -> None:
    steps = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.md", "content": "A\n"}, "id": "w1"}]},
        {"text": "wrote a"},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.md", "content": "B\n"}, "id": "w2"}]},
        {"text": "did not write b"},
    ]
    client = RecordingClient(answers=["allow_once", "reject_once"])
    async with editor(work, *scripted(work, steps), client=client) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert await prompt(ed, session.session_id, "write a") == "end_turn"
        assert await prompt(ed, session.session_id, "write b") == "end_turn"
    assert (work / "a.md").read_text() == "A\n"
    assert not (work / "b.md").exists()
    (first, options), (second, _) = client.asked
    assert [option.kind for option in options] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert first.tool_call_id == "w1" and first.kind == "edit" and first.title == "Write a.md"
    assert first.raw_input == {"path": "a.md", "content": "A\n"}
    assert first.locations is not None and first.locations[0].path == str((work / "a.md").resolve())
    assert second.tool_call_id == "w2"
    starts = {update.tool_call_id: update for update in client.of(ToolCallStart)}
    assert starts["w1"].kind == "edit" and starts["w1"].raw_input == {"path": "a.md", "content": "A\n"}
    ends = {update.tool_call_id: update for update in client.of(ToolCallProgress)}
    assert ends["w1"].status == "completed" and ends["w2"].status == "failed"
    assert "rejected" in ends["w2"].raw_output.lower()


async def test_allow_always_is_not_asked_again_and_reject_always_is_remembered(work: Path) -> None:
    steps = [
        shell_call("x1", "echo first-run"),
        {"text": "one"},
        shell_call("x2", "echo second-run"),
        {"text": "two"},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "c.md", "content": "C"}, "id": "w1"}]},
        {"text": "three"},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "c.md", "content": "C"}, "id": "w2"}]},
        {"text": "four"},
    ]
    client = RecordingClient(answers=["allow_always", "reject_always"])
    async with editor(work, *scripted(work, steps), client=client) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        for text in ("one", "two", "three", "four"):
            assert await prompt(ed, session.session_id, text) == "end_turn"
    assert [call.tool_call_id for call, _ in client.asked] == ["x1", "w1"]
    ends = {update.tool_call_id: update for update in client.of(ToolCallProgress)}
    assert ends["x1"].status == "completed" and "first-run" in ends["x1"].raw_output
    assert ends["x2"].status == "completed" and "second-run" in ends["x2"].raw_output
    assert ends["w1"].status == "failed" and ends["w2"].status == "failed"
    assert not (work / "c.md").exists()
    starts = {update.tool_call_id: update for update in client.of(ToolCallStart)}
    assert starts["x1"].kind == "execute" and starts["x1"].title == "Run echo first-run"


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                found.append(int(entry.name))
    return found


async def test_cancel_mid_turn_stops_with_cancelled_and_kills_the_tool_process(work: Path) -> None:
    marker = f"41.{os.getpid()}"
    steps = [shell_call("s1", f"sleep {marker}"), {"text": "never"}]
    client = RecordingClient(answers=["allow_once"])
    async with editor(work, *scripted(work, steps), client=client) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        running = asyncio.create_task(prompt(ed, session.session_id, "sleep"))
        for _ in range(200):
            if _processes_with(f"sleep {marker}"):
                break
            await asyncio.sleep(0.05)
        assert _processes_with(f"sleep {marker}"), "the tool's process never started"
        await ed.conn.cancel(session_id=session.session_id)
        assert await asyncio.wait_for(running, TIMEOUT) == "cancelled"
        for _ in range(100):
            if not _processes_with(f"sleep {marker}"):
                break
            await asyncio.sleep(0.05)
        assert not _processes_with(f"sleep {marker}")
        # the session keeps serving after a cancelled turn
        assert await prompt(ed, session.session_id, "again") == "end_turn"
    assert "never" in client.text()


async def test_cancel_while_a_permission_request_is_open_rejects_the_call(work: Path) -> None:
    steps = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "d.md", "content": "D"}, "id": "w1"}]}]
    client = RecordingClient(answers=["allow_once"], hold=asyncio.Event())
    async with editor(work, *scripted(work, [*steps, {"text": "later"}]), client=client) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        running = asyncio.create_task(prompt(ed, session.session_id, "write d"))
        await asyncio.wait_for(client.asked_event.wait(), TIMEOUT)
        await ed.conn.cancel(session_id=session.session_id)
        assert await asyncio.wait_for(running, TIMEOUT) == "cancelled"
        assert client.hold is not None
        client.hold.set()  # the editor's late "allow" must not run the call
        await asyncio.sleep(0.3)
    assert not (work / "d.md").exists()


async def test_session_load_replays_the_stored_conversation(work: Path, model: LoopbackOpenAIServer) -> None:
    model.enqueue_text("The code word is heron.").enqueue_text("You told me heron.")
    environment = openai_environment(model.base_url)
    async with editor(work, env=environment) as first:
        session = await first.conn.new_session(cwd=str(work), mcp_servers=[])
        assert await prompt(first, session.session_id, "remember the code word") == "end_turn"
    async with editor(work, env=environment) as second:
        loaded = await second.conn.load_session(cwd=str(work), session_id=session.session_id, mcp_servers=[])
        assert loaded.modes is not None
        replayed = [(type(update), update.content.text) for _, update in second.client.updates]
        assert replayed == [
            (UserMessageChunk, "remember the code word"),
            (AgentMessageChunk, "The code word is heron."),
        ]
        assert await prompt(second, session.session_id, "what was it?") == "end_turn"
    contents = [message["content"] for message in model.requests[1]["messages"]]
    assert contents[-3:] == ["remember the code word", "The code word is heron.", "what was it?"]


async def test_session_load_of_an_unknown_session_is_an_error(work: Path) -> None:
    from acp import RequestError

    async with editor(work, *scripted(work, [{"text": "hi"}])) as ed:
        with pytest.raises(RequestError) as raised:
            await ed.conn.load_session(cwd=str(work), session_id="no-such-session", mcp_servers=[])
        assert raised.value.code == -32002
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert await prompt(ed, session.session_id, "still here?") == "end_turn"


async def test_malformed_messages_get_json_rpc_errors_and_the_agent_keeps_serving(work: Path) -> None:
    async with editor(work, *scripted(work, [{"text": "still serving"}])) as ed:
        assert ed.process.stdin is not None
        ed.process.stdin.write(b"{not json\n")
        ed.process.stdin.write(b"[1, 2, 3]\n")
        ed.process.stdin.write(b'{"jsonrpc": "2.0", "id": 77, "method": 5}\n')
        ed.process.stdin.write(b'{"jsonrpc": "2.0", "id": 78, "method": "session/prompt", "params": {"x": 1}}\n')
        ed.process.stdin.write(b'{"jsonrpc": "2.0", "id": 79, "method": "no/such/method", "params": {}}\n')
        await ed.process.stdin.drain()
        for _ in range(100):
            if len([message for message in ed.incoming if "error" in message]) >= 5:
                break
            await asyncio.sleep(0.05)
        errors = {message["id"]: message["error"]["code"] for message in ed.incoming if "error" in message}
        assert [message["error"]["code"] for message in ed.incoming if message.get("id") is None] == [-32700, -32600]
        assert errors[77] == -32600 and errors[78] == -32602 and errors[79] == -32601
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert await prompt(ed, session.session_id, "are you there?") == "end_turn"
        assert ed.client.text() == "still serving"


async def test_plan_mode_refuses_changes_without_asking_and_default_mode_asks_again(work: Path) -> None:
    write = {"name": "write_file", "arguments": {"path": "e.md", "content": "E"}}
    steps = [{"tool_calls": [{**write, "id": "p1"}]}, {"text": "planned"}, {"tool_calls": [{**write, "id": "p2"}]}]
    client = RecordingClient(answers=["allow_once"])
    async with editor(work, *scripted(work, [*steps, {"text": "written"}]), client=client) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        await ed.conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        assert await prompt(ed, session.session_id, "plan it") == "end_turn"
        assert client.asked == [] and not (work / "e.md").exists()
        await ed.conn.set_session_mode(session_id=session.session_id, mode_id="default")
        assert await prompt(ed, session.session_id, "do it") == "end_turn"
    ends = {update.tool_call_id: update for update in client.of(ToolCallProgress)}
    assert ends["p1"].status == "failed" and "planning mode" in ends["p1"].raw_output.lower()
    assert [call.tool_call_id for call, _ in client.asked] == ["p2"]
    assert (work / "e.md").read_text() == "E"


async def test_manage_todo_becomes_a_plan_and_a_cut_answer_stops_with_max_tokens(work: Path) -> None:
    add = {"name": "manage_todo", "arguments": {"action": "add", "task": "Write the tests", "priority": "high"}}
    steps = [{"tool_calls": [{**add, "id": "t1"}]}, {"text": "cut", "finish_reason": "length"}]
    async with editor(work, *scripted(work, steps)) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert await prompt(ed, session.session_id, "plan") == "max_tokens"
    (plan,) = ed.client.of(AgentPlanUpdate)
    assert [(entry.content, entry.priority, entry.status) for entry in plan.entries] == [
        ("Write the tests", "high", "pending")
    ]


async def test_a_closed_connection_rejects_the_open_permission_request(work: Path) -> None:
    steps = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "f.md", "content": "F"}, "id": "w1"}]}]
    client = RecordingClient(answers=["allow_once"], hold=asyncio.Event())
    async with editor(work, *scripted(work, [*steps, {"text": "after"}]), client=client) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        running = asyncio.create_task(prompt(ed, session.session_id, "write f"))
        await asyncio.wait_for(client.asked_event.wait(), TIMEOUT)
        process = ed.process
    # the editor went away while the question was open: the agent exits and the call never runs
    with contextlib.suppress(BaseException):
        await running
    assert await asyncio.wait_for(process.wait(), TIMEOUT) == 0  # left on its own, not terminated by the SDK
    assert not (work / "f.md").exists()


async def test_the_editors_mcp_servers_join_the_tools(work: Path) -> None:
    pytest.importorskip("mcp_server_time")
    from acp.schema import McpServerStdio

    call = {"name": "mcp__time__get_current_time", "arguments": {"timezone": "UTC"}, "id": "m1"}
    client = RecordingClient(answers=["allow_once"])
    async with editor(work, *scripted(work, [{"tool_calls": [call]}, {"text": "it is now"}]), client=client) as ed:
        server = McpServerStdio(
            name="time", command=sys.executable, args=["-m", "mcp_server_time", "--local-timezone", "UTC"], env=[]
        )
        session = await asyncio.wait_for(ed.conn.new_session(cwd=str(work), mcp_servers=[server]), TIMEOUT)
        assert await prompt(ed, session.session_id, "what time is it?") == "end_turn"
    ends = {update.tool_call_id: update for update in client.of(ToolCallProgress)}
    assert ends["m1"].status == "completed" and '"timezone": "UTC"' in ends["m1"].raw_output
    starts = {update.tool_call_id: update for update in client.of(ToolCallStart)}
    assert starts["m1"].kind == "other" and starts["m1"].title == "mcp__time__get_current_time"


async def test_a_failed_turn_is_a_json_rpc_error_and_the_session_keeps_serving(work: Path) -> None:
    from acp import RequestError

    steps = [{"error": {"message": "the model is gone", "status": 400}}, {"text": "back again"}]
    async with editor(work, *scripted(work, steps)) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        with pytest.raises(RequestError) as raised:
            await prompt(ed, session.session_id, "first")
        assert raised.value.code == -32603 and "the model is gone" in str(raised.value)
        assert await prompt(ed, session.session_id, "second") == "end_turn"
        assert ed.client.text() == "back again"


async def test_an_unusable_configuration_fails_session_new_with_its_reason(work: Path) -> None:
    from acp import RequestError

    async with editor(work, "--provider", "no-such-provider") as ed:
        with pytest.raises(RequestError) as raised:
            await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert "no-such-provider" in str(raised.value)
        with pytest.raises(RequestError) as relative:
            await ed.conn.new_session(cwd="relative/folder", mcp_servers=[])
        assert relative.value.code == -32602


EDITOR_READS = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=False))


def read_call(call_id: str, path: str, **window: int) -> dict[str, Any]:
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": path, **window}, "id": call_id}]}


async def test_reads_see_the_editors_unsaved_buffer_when_it_offers_file_reads(work: Path) -> None:
    (work / "g.md").write_text("on disk 1\non disk 2\non disk 3\n")
    (work.parent / "secret.txt").write_text("outside")
    target = str((work / "g.md").resolve())
    steps = [
        read_call("r1", "g.md"),
        read_call("r2", "g.md", start_line=2, line_count=1),
        read_call("r3", "../secret.txt"),
        {"text": "read"},
    ]
    client = RecordingClient(buffers={target: "unsaved 1\nunsaved 2\nunsaved 3\n"})
    async with editor(work, *scripted(work, steps), client=client, capabilities=EDITOR_READS) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert await prompt(ed, session.session_id, "read g") == "end_turn"
    ends = {update.tool_call_id: update for update in client.of(ToolCallProgress)}
    assert ends["r1"].status == "completed" and ends["r1"].raw_output == "unsaved 1\nunsaved 2\nunsaved 3\n"
    assert ends["r2"].status == "completed" and ends["r2"].raw_output == "unsaved 2\n"
    assert ends["r3"].status == "failed"  # judged on disk first: the editor is never asked about it
    assert client.reads == [(target, None, None), (target, 2, 1)]


async def test_reads_stay_on_disk_when_the_editor_offers_no_file_reads(work: Path) -> None:
    (work / "g.md").write_text("on disk\n")
    client = RecordingClient(buffers={str((work / "g.md").resolve()): "unsaved\n"})
    async with editor(work, *scripted(work, [read_call("r1", "g.md"), {"text": "read"}]), client=client) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert await prompt(ed, session.session_id, "read g") == "end_turn"
    ends = {update.tool_call_id: update for update in client.of(ToolCallProgress)}
    assert ends["r1"].raw_output == "on disk\n" and client.reads == []
