"""Fixtures of the MCP client tests: the test servers' commands, loopback HTTP servers and the npm reference servers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from ironhive.adapters.mcp.plugin_config import McpServerConfig

ROOT = Path(__file__).resolve().parents[3]
SERVERS = ROOT / "tests" / "support" / "mcp_servers"

NPM_PACKAGES = {
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
}
"""The npm reference servers, pinned. ``.ci/run`` pre-installs them into ``NPM_PREFIX`` (see ``npm_servers``)."""

NPM_PREFIX = Path(os.environ.get("IRONHIVE_TEST_NPM_PREFIX", ROOT / "tests" / "artifacts" / "npm-mcp-servers"))


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
    """``node_modules`` holding the npm reference servers, installed once into ``NPM_PREFIX`` when missing.

    CI pre-installs them (``npm install --prefix tests/artifacts/npm-mcp-servers --no-audit --no-fund
    @modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31``); without node
    and npm, or when the install fails, the tests that need them are skipped with the reason.
    """
    modules = NPM_PREFIX / "node_modules"
    if all((modules / package / "package.json").is_file() for package in NPM_PACKAGES):
        return modules
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        pytest.skip("node and npm are needed for the npm MCP reference servers")
    specs = [f"{package}@{version}" for package, version in NPM_PACKAGES.items()]
    try:
        done = subprocess.run(
            [npm, "install", "--prefix", str(NPM_PREFIX), "--no-audit", "--no-fund", "--silent", *specs],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of the MCP reference servers took over 5 minutes")
    if done.returncode != 0:
        pytest.skip(f"npm install of the MCP reference servers failed: {done.stderr.strip()[-300:]}")
    return modules
