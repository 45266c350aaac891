"""``ironhive acp`` end to end: config options (model, mode) and writes that reach the editor (diffs, buffers)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    ConfigOptionUpdate,
    FileEditToolCallContent,
    FileSystemCapabilities,
    SessionConfigOptionSelect,
    ToolCallProgress,
)

from tests.e2e.test_acp import TIMEOUT, RecordingClient, editor, prompt, scripted
from tests.support.openai_server import LoopbackOpenAIServer
from tests.support.server_process import openai_environment

EDITOR_FILES = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
READS_ONLY = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=False))


def options_of(options: list[Any] | None) -> dict[str, SessionConfigOptionSelect]:
    assert options is not None
    return {option.id: option for option in options}


def values(option: SessionConfigOptionSelect) -> list[str]:
    return [choice.value for choice in option.options]


async def until(found: Callable[[], Any]) -> Any:
    for _ in range(int(TIMEOUT / 0.05)):
        if value := found():
            return value
        await asyncio.sleep(0.05)
    raise AssertionError("it never happened")


def chat_models(server: LoopbackOpenAIServer) -> list[str]:
    return [request["model"] for request in server.requests if "messages" in request]


async def test_the_editor_switches_the_model_and_keeps_conversation_mode_and_always_allowed(work: Path) -> None:
    with LoopbackOpenAIServer(models=("gpt-test", "gpt-other")) as server:
        server.enqueue_tool_calls([("x1", "execute_command", {"command": "echo kept"})]).enqueue_text("first")
        server.enqueue_tool_calls([("x2", "execute_command", {"command": "echo kept"})]).enqueue_text("second")
        client = RecordingClient(answers=["allow_always"])
        async with editor(work, env=openai_environment(server.base_url), client=client) as ed:
            session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
            sid = session.session_id
            opened = options_of(session.config_options)
            assert opened["model"].category == "model" and opened["model"].current_value == "openai/gpt-test"
            assert opened["mode"].current_value == "default" and values(opened["mode"]) == ["default", "plan"]
            # the provider's listing arrives after session/new, as a config_option_update
            listed = await until(lambda: client.of(ConfigOptionUpdate))
            assert "openai/gpt-other" in values(options_of(listed[-1].config_options)["model"])
            assert await prompt(ed, sid, "one") == "end_turn"

            await ed.conn.set_config_option(config_id="mode", session_id=sid, value="plan")
            switched = await ed.conn.set_config_option(config_id="model", session_id=sid, value="openai/gpt-other")
            now = options_of(switched.config_options)
            assert now["model"].current_value == "openai/gpt-other" and now["mode"].current_value == "plan"
            with pytest.raises(RequestError) as unknown:
                await ed.conn.set_config_option(config_id="model", session_id=sid, value="openai/not-offered")
            assert unknown.value.code == -32602
            back = await ed.conn.set_config_option(config_id="mode", session_id=sid, value="default")
            assert options_of(back.config_options)["model"].current_value == "openai/gpt-other"
            assert await prompt(ed, sid, "two") == "end_turn"
    assert chat_models(server) == ["gpt-test", "gpt-test", "gpt-other", "gpt-other"]
    contents = [message.get("content") for message in server.requests[-1]["messages"]]
    assert "one" in contents and "first" in contents and "two" in contents  # the conversation carried over
    assert [call.tool_call_id for call, _ in client.asked] == ["x1"]  # "always allow" carried over
    ends = {update.tool_call_id: update for update in client.of(ToolCallProgress)}
    assert ends["x2"].status == "completed" and "kept" in ends["x2"].raw_output


async def test_a_switch_during_a_turn_applies_to_the_next_turn(work: Path) -> None:
    with LoopbackOpenAIServer(models=("gpt-test", "gpt-other")) as server:
        server.enqueue_text("slow answer", chunks=["slow ", "answer"], chunk_delay=0.5).enqueue_text("next")
        async with editor(work, env=openai_environment(server.base_url)) as ed:
            session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
            await until(lambda: ed.client.of(ConfigOptionUpdate))
            running = asyncio.create_task(prompt(ed, session.session_id, "one"))
            await until(lambda: ed.client.of(AgentMessageChunk))
            answer = await ed.conn.set_config_option(
                config_id="model", session_id=session.session_id, value="openai/gpt-other"
            )
            assert options_of(answer.config_options)["model"].current_value == "openai/gpt-other"
            assert await asyncio.wait_for(running, TIMEOUT) == "end_turn"
            assert await prompt(ed, session.session_id, "two") == "end_turn"
    assert chat_models(server) == ["gpt-test", "gpt-other"]
    assert ed.client.text() == "slow answernext"


async def test_without_a_reachable_listing_the_configured_model_is_offered_and_mode_is_an_option(work: Path) -> None:
    steps = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "p.md", "content": "P"}, "id": "p1"}]}]
    args = scripted(work, [*steps, {"text": "planned"}])
    async with editor(work, *args, env={"LMSUPPLY_ENABLED": "false"}) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        sid = session.session_id
        model = options_of(session.config_options)["model"]
        assert values(model) == [model.current_value] and model.current_value.startswith("scripted/")
        for config_id, value in (("model", "scripted/other.json"), ("no-such-option", "x"), ("mode", "fast")):
            with pytest.raises(RequestError) as refused:
                await ed.conn.set_config_option(config_id=config_id, session_id=sid, value=value)
            assert refused.value.code == -32602
        await ed.conn.set_session_mode(session_id=sid, mode_id="plan")
        # set_session_mode keeps the mode option in step
        (changed,) = await until(lambda: ed.client.of(ConfigOptionUpdate))
        assert options_of(changed.config_options)["mode"].current_value == "plan"
        assert await prompt(ed, sid, "plan") == "end_turn"
    assert ed.client.asked == [] and not (work / "p.md").exists()


def write(call_id: str, path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}, "id": call_id}]}


async def test_writes_reach_the_editor_as_diffs_and_buffers_only_after_the_disk_rules_decided(work: Path) -> None:
    (work / "twin.md").write_text("twin\n")
    os.link(work / "twin.md", work.parent / "other-name.md")  # a hard link: its other name is outside
    (work.parent / "outside.md").write_text("outside\n")
    (work / "link.md").symlink_to(work.parent / "outside.md")
    edit = {"name": "edit_file", "arguments": {"path": "new.md", "old_string": "A", "new_string": "B"}, "id": "e1"}
    steps = [
        write("w1", "new.md", "A\n"),
        {"tool_calls": [edit]},
        write("h1", "twin.md", "changed\n"),
        write("l1", "link.md", "changed\n"),
        {"text": "done"},
    ]
    client = RecordingClient(answers=["allow_once"] * 4)
    async with editor(work, *scripted(work, steps), client=client, capabilities=EDITOR_FILES) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert await prompt(ed, session.session_id, "write") == "end_turn"
    target = str((work / "new.md").resolve())
    outside = str((work.parent / "outside.md").resolve())
    # the editor gets the file the rules judged and the tool wrote (the link's target, asked about as such)
    assert client.writes == [(target, "A\n"), (target, "B\n"), (outside, "changed\n")]
    assert [call.tool_call_id for call, _ in client.asked] == ["w1", "e1", "h1", "l1"]
    statuses = [(update.tool_call_id, update.status) for update in client.of(ToolCallProgress)]
    # each call the editor allowed runs (in_progress) before it ends; the hard link is refused on disk after approval
    assert statuses == [
        (call, status)
        for call, end in (("w1", "completed"), ("e1", "completed"), ("h1", "failed"), ("l1", "completed"))
        for status in ("in_progress", end)
    ]
    assert (work / "new.md").read_text() == "B\n"
    ends = {update.tool_call_id: update for update in client.of(ToolCallProgress)}
    diffs = {call: ends[call].content[0] for call in ("w1", "e1")}
    assert all(isinstance(diff, FileEditToolCallContent) and diff.path == target for diff in diffs.values())
    assert (diffs["w1"].old_text, diffs["w1"].new_text) == (None, "A\n")
    assert (diffs["e1"].old_text, diffs["e1"].new_text) == ("A\n", "B\n")
    assert ends["h1"].status == "failed" and "hard link" in ends["h1"].raw_output
    assert (work / "twin.md").read_text() == "twin\n"  # refused on disk, so never passed to the editor
    assert (work.parent / "outside.md").read_text() == "changed\n" and (work / "link.md").is_symlink()


async def test_an_editor_without_file_writes_still_sees_the_diff(work: Path) -> None:
    (work / "old.md").write_text("before\n")
    client = RecordingClient(answers=["allow_once"])
    args = scripted(work, [write("w1", "old.md", "after\n"), {"text": "done"}])
    async with editor(work, *args, client=client, capabilities=READS_ONLY) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert await prompt(ed, session.session_id, "write") == "end_turn"
    started, end = [update for update in client.of(ToolCallProgress) if update.tool_call_id == "w1"]
    assert (started.status, end.status) == ("in_progress", "completed")
    diff = end.content[0]
    assert isinstance(diff, FileEditToolCallContent)
    assert (diff.old_text, diff.new_text) == ("before\n", "after\n") and client.writes == []


async def test_a_turn_out_of_tool_rounds_stops_with_max_turn_requests(work: Path) -> None:
    settings = work.parent / "home" / ".ironhive" / "config.yaml"
    settings.parent.mkdir(parents=True, mode=0o700)
    settings.write_text("chatBehavior:\n    maximumIterationsPerRequest: 1\n")
    read = {"name": "read_file", "arguments": {"path": "r.md"}}
    (work / "r.md").write_text("r\n")
    steps = [{"tool_calls": [{**read, "id": "r1"}]}, {"text": "stopped"}, {"tool_calls": [{**read, "id": "r2"}]}]
    async with editor(work, *scripted(work, [*steps, {"text": "read it"}, {"text": "plain"}])) as ed:
        session = await ed.conn.new_session(cwd=str(work), mcp_servers=[])
        assert await prompt(ed, session.session_id, "read twice") == "max_turn_requests"
        assert await prompt(ed, session.session_id, "again") == "max_turn_requests"
        assert await prompt(ed, session.session_id, "no tools") == "end_turn"
    assert ed.client.text() == "stoppedread itplain"
