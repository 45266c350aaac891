"""MCP tool arguments are checked against the server's input schema before the call (real mcp-server-time)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from ironhive.adapters.mcp.plugin_config import McpServerConfig
from ironhive.adapters.mcp.provider import McpToolProvider
from ironhive.domain.errors import ToolArgumentError
from ironhive.domain.invocation.resilient import is_recovery_directive, resilient_function_invoker


def recorded_time_server(log: Path) -> McpServerConfig:
    """mcp-server-time behind ``tee``: every message the client sends it is appended to ``log`` first."""
    server = shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])
    return McpServerConfig(
        name="time",
        transport="stdio",
        command="sh",
        arguments=("-c", f"tee -a {shlex.quote(str(log))} | {server}"),
        timeout=20.0,
        startup_timeout=30.0,
    )


def calls_received(log: Path) -> list[dict[str, object]]:
    """The ``tools/call`` requests the server was sent, as it read them."""
    messages = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    calls = [message["params"] for message in messages if message.get("method") == "tools/call"]
    return [{"name": call["name"], "arguments": call["arguments"]} for call in calls]


async def test_bad_arguments_never_reach_the_server_and_come_back_as_the_recovery_directive(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    async with McpToolProvider([recorded_time_server(log)]) as provider:
        tools = {tool.spec.name: tool for tool in await provider.get_tools()}
        current = tools["mcp__time__get_current_time"]
        convert = tools["mcp__time__convert_time"]

        with pytest.raises(ToolArgumentError) as missing:
            await current.invoke({})
        assert str(missing.value) == "Missing required parameter 'timezone' for tool 'mcp__time__get_current_time'"
        assert missing.value.parameter == "timezone"

        with pytest.raises(ToolArgumentError) as mistyped:
            await convert.invoke({"source_timezone": "UTC", "time": ["12:00"], "target_timezone": "Asia/Tokyo"})
        assert (
            str(mistyped.value) == "Parameter 'time' of tool 'mcp__time__convert_time' must be a string; got an array"
        )

        directive = await resilient_function_invoker(current, {"timezone": {"name": "UTC"}})
        assert is_recovery_directive(directive)
        assert "Parameter 'timezone' of tool 'mcp__time__get_current_time' must be a string; got an object" in directive
        assert "1. Supply the parameter 'timezone'" in directive
        assert calls_received(log) == []

        # Arguments that fit pass, mended the way the built-in tools mend them (a camelCase name); the schema is
        # open, so an unknown argument is the server's to judge, and no default is filled in for it.
        converted = json.loads(
            await convert.invoke({"sourceTimezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
        )
        assert converted["target"]["datetime"].endswith("T21:00:00+09:00")
        assert calls_received(log) == [
            {
                "name": "convert_time",
                "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            }
        ]
        assert current.spec.parameters.get("additionalProperties") is not False
        assert json.loads(await current.invoke({"timezone": "UTC", "note": "x"}))["timezone"] == "UTC"
        assert calls_received(log)[-1] == {"name": "get_current_time", "arguments": {"timezone": "UTC", "note": "x"}}
