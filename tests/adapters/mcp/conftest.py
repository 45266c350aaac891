"""Fixtures of the MCP client tests: the test servers' commands, loopback HTTP servers and the npm reference servers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from ironhive.adapters.mcp.plugin_config import McpServerConfig
from tests.support.components import MCP_NPM_PREFIX, MCP_NPM_SERVERS

ROOT = Path(__file__).resolve().parents[3]
SERVERS = ROOT / "tests" / "support" / "mcp_servers"

NPM_PREFIX = MCP_NPM_PREFIX
"""Where ``.ci/run`` installs the pinned npm reference servers (``MCP_NPM_PACKAGES``; see ``npm_servers``)."""


def script_server(
    name: str,
    script: str,
    *arguments: str,
    timeout: float = 10.0,
    startup_timeout: float = 30.0,
    environment: Mapping[str, str] | None = None,
    working_directory: Path | None = None,
    auto_reconnect: bool = True,
) -> McpServerConfig:
    """A stdio server running one of ``tests/support/mcp_servers`` with this interpreter (generous start-up time)."""
    return McpServerConfig(
        name=name,
        transport="stdio",
        command=sys.executable,
        arguments=(str(SERVERS / script), *arguments),
        timeout=timeout,
        startup_timeout=startup_timeout,
        environment=dict(environment or {}),
        working_directory=working_directory,
        auto_reconnect=auto_reconnect,
    )


def assert_reaped(pids: list[int]) -> None:
    """Every process has exited and been waited for (a zombie still answers ``kill(pid, 0)``)."""
    assert pids
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


class LoopbackServer:
    """``http_server.py`` in a subprocess on 127.0.0.1 (streamable HTTP, or SSE)."""

    def __init__(self, *, sse: bool = False, port: int = 0) -> None:
        command = [sys.executable, str(SERVERS / "http_server.py"), *(["--sse"] if sse else []), "--port", str(port)]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.strip():
            self.stop()
            pytest.fail("the loopback MCP server did not start")
        self.port = int(line)
        self.url = f"http://127.0.0.1:{self.port}/{'sse' if sse else 'mcp'}"

    def stop(self) -> None:
        """Kill it (uvicorn's graceful stop would wait for the client's open stream) and reap it."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait(timeout=10)
        if self._process.stdout is not None:
            self._process.stdout.close()


@pytest.fixture
def loopback_server() -> Iterator[Callable[..., LoopbackServer]]:
    """Start loopback MCP servers; every one still running is stopped after the test."""
    started: list[LoopbackServer] = []

    def start(*, sse: bool = False, port: int = 0) -> LoopbackServer:
        server = LoopbackServer(sse=sse, port=port)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def npm_servers() -> Path:
    """``node_modules`` holding the npm reference servers, which ``.ci/run`` installs into ``NPM_PREFIX``.

    The suite installs nothing (a test reaches no registry): where node or the servers are missing, the tests that
    need them are skipped with the install command, and fail where ``CI`` is set.
    """
    MCP_NPM_SERVERS.require()
    return NPM_PREFIX / "node_modules"
