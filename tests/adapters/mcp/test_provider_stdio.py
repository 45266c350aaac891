"""McpToolProvider over stdio with real servers: mcp-server-time from PyPI and the small test servers."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ironhive.adapters.mcp.plugin_config import McpServerConfig
from ironhive.adapters.mcp.provider import McpTool, McpToolProvider
from ironhive.domain.errors import ToolError
from ironhive.ports.tools import Tool, ToolProvider
from tests.adapters.mcp.conftest import assert_reaped, script_server


def by_name(tools: object) -> dict[str, Tool]:
    assert isinstance(tools, list | tuple)
    return {tool.spec.name: tool for tool in tools}


async def test_mcp_server_time_tools_are_listed_with_the_prefix_and_answer_as_text() -> None:
    time_server = McpServerConfig(
        name="time",
        transport="stdio",
        command=sys.executable,
        arguments=("-m", "mcp_server_time", "--local-timezone", "UTC"),
        timeout=20.0,
    )
    async with McpToolProvider([time_server]) as provider:
        assert isinstance(provider, ToolProvider)
        tools = by_name(await provider.get_tools())
        assert set(tools) == {"mcp__time__get_current_time", "mcp__time__convert_time"}
        current = tools["mcp__time__get_current_time"]
        assert isinstance(current, McpTool) and current.server_name == "time"
        assert current.remote_name == "get_current_time"
        assert current.spec.description.startswith("Get current time")
        assert current.spec.parameters["required"] == ["timezone"]

        now = json.loads(await current.invoke({"timezone": "UTC"}))
        assert now["timezone"] == "UTC"
        assert abs((datetime.fromisoformat(now["datetime"]) - datetime.now(UTC)).total_seconds()) < 120

        converted = json.loads(
            await tools["mcp__time__convert_time"].invoke(
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            )
        )
        assert converted["target"]["datetime"].endswith("T21:00:00+09:00")
        assert converted["time_difference"] == "+9.0h"

        with pytest.raises(ToolError, match="Invalid timezone"):
            await current.invoke({"timezone": "Nowhere/Atlantis"})
        assert provider.status()[0].state == "connected"
        assert provider.status()[0].tool_count == 2


async def test_calls_time_out_unless_progress_arrives_and_fail_once_the_provider_closed() -> None:
    async with McpToolProvider([script_server("worker", "hanging_server.py", timeout=0.5)]) as provider:
        tools = by_name(await provider.get_tools())
        started = time.monotonic()
        with pytest.raises(ToolError) as raised:
            await tools["mcp__worker__hang"].invoke({})
        assert str(raised.value) == "MCP tool 'mcp__worker__hang' timed out after 500 ms"
        assert 0.45 < time.monotonic() - started < 3
        assert await tools["mcp__worker__echo"].invoke({"text": "still here"}) == "still here"

        # Cancelling a call (Ctrl+C in the agent) cancels just that call.
        pending = asyncio.create_task(tools["mcp__worker__hang"].invoke({}))
        await asyncio.sleep(0.1)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        assert await tools["mcp__worker__echo"].invoke({"text": "after cancel"}) == "after cancel"

        # Progress every 0.2 s keeps a 1.5 s call alive under a 0.5 s timeout; progress every 0.75 s does not.
        slow = tools["mcp__worker__slow"]
        started = time.monotonic()
        assert await slow.invoke({"seconds": 1.5, "interval": 0.2}) == "done after 8 progress updates"
        assert time.monotonic() - started > 1.4
        with pytest.raises(ToolError, match="timed out after 500 ms"):
            await slow.invoke({"seconds": 1.5, "interval": 0.75})
        assert provider.status()[0].state == "connected"
    with pytest.raises(ToolError, match="MCP server 'worker' is closed"):
        await tools["mcp__worker__echo"].invoke({"text": "anyone?"})


async def test_a_server_that_dies_fails_that_call_and_is_restarted_on_the_next(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    crashing = script_server(
        "flaky", "crashing_server.py", "--crash-after", "2", environment={"MCP_TEST_PID_FILE": str(pid_file)}
    )
    async with McpToolProvider([crashing]) as provider:
        count = by_name(await provider.get_tools())["mcp__flaky__count"]
        first = await count.invoke({})
        assert first.startswith("call 1 in process ")
        with pytest.raises(ToolError, match=r"the server 'flaky' stopped .*It is restarted on the next call"):
            await count.invoke({})
        assert provider.status()[0].state == "disconnected"
        second = await count.invoke({})
        assert second.startswith("call 1 in process ")
        assert second != first
        assert provider.status()[0].state == "connected"
        assert len(await provider.get_tools()) == 1
    pids = [int(line) for line in pid_file.read_text().split()]
    assert len(pids) == 2
    assert_reaped(pids)


async def test_a_server_killed_while_idle_shows_in_the_health_check_and_restarts_on_the_next_call(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids"
    crashing = script_server(
        "idle", "crashing_server.py", "--crash-after", "99", environment={"MCP_TEST_PID_FILE": str(pid_file)}
    )
    async with McpToolProvider([crashing]) as provider:
        count = by_name(await provider.get_tools())["mcp__idle__count"]
        (healthy,) = await provider.check_health()
        assert (healthy.state, healthy.tool_count, healthy.last_error) == ("connected", 1, None)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        (dead,) = await provider.check_health()
        assert dead.state == "disconnected" and dead.last_error
        assert (await count.invoke({})).startswith("call 1 in process ")
        assert provider.status()[0].state == "connected"
    assert_reaped([int(line) for line in pid_file.read_text().split()])


async def test_without_auto_reconnect_a_dead_server_stays_down(tmp_path: Path) -> None:
    crashing = script_server("once", "crashing_server.py", "--crash-after", "1", auto_reconnect=False)
    async with McpToolProvider([crashing]) as provider:
        count = by_name(await provider.get_tools())["mcp__once__count"]
        with pytest.raises(ToolError, match="stopped"):
            await count.invoke({})
        with pytest.raises(ToolError, match=r"is not connected .*autoReconnect is off"):
            await count.invoke({})


async def test_is_error_results_raise_tool_error_and_other_content_is_summarised() -> None:
    async with McpToolProvider([script_server("odd", "failing_server.py")]) as provider:
        tools = by_name(await provider.get_tools())
        with pytest.raises(ToolError) as raised:
            await tools["mcp__odd__fail"].invoke({"reason": "the disk is full"})
        assert "the disk is full" in str(raised.value)
        mixed = await tools["mcp__odd__mixed"].invoke({})
        assert mixed == "first line\n[image: image/png]\nembedded notes\nlast line"
        assert await tools["mcp__odd__odd_name_with_spaces"].invoke({}) == "odd ok"
        long_names = [name for name in tools if name.startswith("mcp__odd__ttt")]
        assert len(long_names) == 1 and len(long_names[0]) == 64
        assert await tools[long_names[0]].invoke({}) == "long ok"
        assert tools["mcp__odd__odd_name_with_spaces"].spec.description == "A tool whose name needs cleaning."


async def test_environment_is_minimal_plus_configured_and_auto_connect_off_waits_for_get_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IRONHIVE_TEST_SECRET", "must not leak")
    server = script_server("env", "failing_server.py", environment={"GREETING": "hello"}, working_directory=tmp_path)
    async with McpToolProvider([server], auto_connect=False) as provider:
        assert provider.status()[0].state == "not_started"
        tools = by_name(await provider.get_tools())
        assert provider.status()[0].state == "connected"
        environment = tools["mcp__env__environment"]
        assert await environment.invoke({"name": "GREETING"}) == "hello"
        assert await environment.invoke({"name": "IRONHIVE_TEST_SECRET"}) == "(unset)"
        assert await environment.invoke({"name": "PATH"}) != "(unset)"
        working_directory = Path(await tools["mcp__env__cwd"].invoke({}))
        assert await asyncio.to_thread(working_directory.samefile, tmp_path)


async def test_servers_that_do_not_start_are_skipped_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="ironhive.adapters.mcp")
    servers = [
        script_server("silent", "hanging_server.py", "--silent", startup_timeout=1.0),
        McpServerConfig(name="missing", transport="stdio", command="/nonexistent/mcp-server", timeout=5.0),
        McpServerConfig(
            name="broken",
            transport="stdio",
            command=sys.executable,
            arguments=("-c", "import sys; sys.stderr.write('boom: bad settings\\n'); sys.exit(2)"),
            timeout=10.0,
        ),
        script_server("fine", "hanging_server.py"),
    ]
    async with McpToolProvider(servers) as provider:
        assert sorted(by_name(await provider.get_tools())) == ["mcp__fine__echo", "mcp__fine__hang", "mcp__fine__slow"]
        status = {entry.name: entry for entry in provider.status()}
    assert [entry.state for entry in status.values()] == ["failed", "failed", "failed", "connected"]
    assert status["silent"].last_error == "no answer within 1000 ms"
    assert status["missing"].last_error == "command not found: /nonexistent/mcp-server"
    assert "boom: bad settings" in (status["broken"].last_error or "")
    assert status["fine"].tool_count == 3 and status["fine"].connected
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert any("'silent' is skipped: no answer within 1000 ms" in message for message in warnings)
    assert any("'missing' is skipped" in message for message in warnings)


async def test_get_tools_outside_the_block_is_a_usage_error_and_names_must_be_unique() -> None:
    with pytest.raises(RuntimeError, match="async context manager"):
        await McpToolProvider().get_tools()
    with pytest.raises(ValueError, match="unique: twice"):
        McpToolProvider([script_server("twice", "hanging_server.py"), script_server("twice", "failing_server.py")])
    async with McpToolProvider() as empty:
        assert await empty.get_tools() == []
        assert empty.status() == ()
