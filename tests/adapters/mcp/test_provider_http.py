"""McpToolProvider over streamable HTTP and SSE against a loopback server built with the SDK's server API."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from ironhive.adapters.mcp.plugin_config import McpServerConfig
from ironhive.adapters.mcp.provider import McpToolProvider
from ironhive.adapters.mcp.trust import TrustDecision, TrustRequest, TrustStore
from ironhive.domain.errors import ToolError
from ironhive.ports.tools import Tool
from tests.adapters.mcp.conftest import LoopbackServer


def by_name(tools: object) -> dict[str, Tool]:
    assert isinstance(tools, list | tuple)
    return {tool.spec.name: tool for tool in tools}


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_tools_over_http_carry_the_configured_headers_and_time_out(
    loopback_server: Callable[..., LoopbackServer], transport: str
) -> None:
    server = loopback_server(sse=transport == "sse")
    config = McpServerConfig(
        name="web",
        transport="sse" if transport == "sse" else "http",
        url=server.url,
        headers={"X-Api-Key": "loopback-secret"},
        timeout=1.0,
    )
    async with McpToolProvider([config]) as provider:
        tools = by_name(await provider.get_tools())
        assert sorted(tools) == ["mcp__web__echo", "mcp__web__hang", "mcp__web__header"]
        assert await tools["mcp__web__echo"].invoke({"text": "over the wire"}) == "echo: over the wire"
        assert await tools["mcp__web__header"].invoke({"name": "X-Api-Key"}) == "loopback-secret"
        with pytest.raises(ToolError, match=r"^MCP tool 'mcp__web__hang' timed out after 1000 ms$"):
            await tools["mcp__web__hang"].invoke({})
        assert provider.status()[0].state == "connected"


async def test_a_dropped_http_connection_fails_the_call_and_the_next_call_reconnects(
    loopback_server: Callable[..., LoopbackServer],
) -> None:
    server = loopback_server()
    config = McpServerConfig(name="web", transport="http", url=server.url, timeout=5.0)
    async with McpToolProvider([config]) as provider:
        echo = by_name(await provider.get_tools())["mcp__web__echo"]
        assert await echo.invoke({"text": "one"}) == "echo: one"
        server.stop()
        with pytest.raises(ToolError, match="the server 'web' stopped"):
            await echo.invoke({"text": "two"})
        with pytest.raises(ToolError, match="MCP server 'web' is not available"):
            await echo.invoke({"text": "three"})
        loopback_server(port=server.port)
        assert await echo.invoke({"text": "four"}) == "echo: four"
        assert provider.status()[0].state == "connected"


async def test_an_unreachable_server_is_skipped() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = McpServerConfig(name="gone", transport="http", url=f"http://127.0.0.1:{port}/mcp", timeout=5.0)
    async with McpToolProvider([config]) as provider:
        assert await provider.get_tools() == []
        (status,) = provider.status()
    assert status.state == "failed"
    assert "ConnectError" in (status.last_error or "")


async def test_http_plugins_of_an_untrusted_project_file_connect_only_once_trusted(
    tmp_path: Path, loopback_server: Callable[..., LoopbackServer]
) -> None:
    server = loopback_server()
    project = tmp_path / "project"
    (project / ".ironhive").mkdir(parents=True)
    (project / ".ironhive" / "plugins.yaml").write_text(
        f"plugins:\n  web: {{transport: http, url: '{server.url}'}}\n  local: {{command: /nonexistent/never-run}}\n",
        encoding="utf-8",
    )
    asked: list[TrustRequest] = []

    class Denier:
        async def decide(self, request: TrustRequest) -> TrustDecision:
            asked.append(request)
            return TrustDecision.DENY

    async with McpToolProvider.from_config(project, home=tmp_path / "home", trust=Denier()) as provider:
        assert await provider.get_tools() == []
        states = {status.name: status.state for status in provider.status()}
    assert states == {"local": "untrusted", "web": "untrusted"}
    assert [request.commands for request in asked] == [(f"web: http {server.url}", "local: /nonexistent/never-run")]

    (project / ".ironhive" / "plugins.yaml").write_text(
        f"plugins:\n  web: {{transport: http, url: '{server.url}'}}\n", encoding="utf-8"
    )
    TrustStore.for_home(tmp_path / "home").trust(project / ".ironhive" / "plugins.yaml")
    async with McpToolProvider.from_config(project, home=tmp_path / "home", trust=Denier()) as provider:
        assert sorted(by_name(await provider.get_tools())) == ["mcp__web__echo", "mcp__web__hang", "mcp__web__header"]
        assert {status.name: status.state for status in provider.status()} == {"web": "connected"}
    assert len(asked) == 1
