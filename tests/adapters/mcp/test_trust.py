"""Plugin-file trust: the store (path + SHA-256), the decision flow, and that untrusted files never start a process."""

from __future__ import annotations

import json
import logging
import stat
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ironhive.adapters.mcp.plugin_config import load_plugin_files, merge_plugin_files
from ironhive.adapters.mcp.provider import McpToolProvider
from ironhive.adapters.mcp.trust import (
    AlwaysDeny,
    TrustDecision,
    TrustRequest,
    TrustStore,
    check_trust,
)
from tests.adapters.mcp.conftest import SERVERS


class FixedClock:
    def now(self) -> datetime:
        return datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def monotonic(self) -> float:
        return 0.0


class RecordingDecider:
    """Answers with a fixed decision and remembers what it was asked."""

    def __init__(self, decision: TrustDecision | Exception) -> None:
        self.decision = decision
        self.requests: list[TrustRequest] = []

    async def decide(self, request: TrustRequest) -> TrustDecision:
        self.requests.append(request)
        if isinstance(self.decision, Exception):
            raise self.decision
        return self.decision


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def marker_plugin_file(project: Path, marker: Path, extra: str = "") -> Path:
    """A project plugin file whose stdio server creates ``marker`` as soon as its process runs."""
    document = {
        "plugins": {
            "marked": {
                "command": sys.executable,
                "arguments": [str(SERVERS / "failing_server.py")],
                "environment": {"MCP_TEST_MARKER": str(marker)},
                "timeoutMs": 30000,
            }
        }
    }
    return write(project / ".ironhive" / "plugins.json", json.dumps(document, indent=2) + extra)


# -- the store ----------------------------------------------------------------------------------------------------


def test_the_store_remembers_path_and_hash_and_an_edit_revokes(tmp_path: Path) -> None:
    store = TrustStore.for_home(tmp_path / "home", clock=FixedClock())
    plugin_file = write(tmp_path / "plugins.yaml", "plugins: {a: {command: x}}\n")
    digest = load_plugin_files(tmp_path, tmp_path / "nohome")[0].sha256
    assert store.state(plugin_file, digest) == "untrusted"

    record = store.trust(plugin_file)
    assert (record.path, record.sha256, record.trusted_at) == (plugin_file.resolve(), digest, FixedClock().now())
    assert store.is_trusted(plugin_file, digest)
    assert store.path == tmp_path / "home" / ".ironhive" / "trust.json"
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    saved = json.loads(store.path.read_text())
    assert saved["files"][str(plugin_file.resolve())] == {"sha256": digest, "trustedAt": "2026-01-02T03:04:05+00:00"}

    write(plugin_file, "plugins: {a: {command: y}}\n")
    edited = load_plugin_files(tmp_path, tmp_path / "nohome")[0].sha256
    assert store.state(plugin_file, edited) == "changed"
    assert not store.is_trusted(plugin_file, edited)
    assert TrustStore.for_home(tmp_path / "home").records() == (record,)

    assert store.revoke(plugin_file) is True
    assert store.revoke(plugin_file) is False
    assert store.state(plugin_file, digest) == "untrusted"


def test_an_unreadable_store_trusts_nothing_and_is_rewritten(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = TrustStore(tmp_path / "trusted.json")
    plugin_file = write(tmp_path / "plugins.yaml", "plugins: {}\n")
    write(store.path, "{not json")
    assert store.records() == ()
    assert "Ignoring unreadable trust store" in caplog.text
    store.trust(plugin_file)
    assert len(store.records()) == 1


# -- the decision flow --------------------------------------------------------------------------------------------


async def test_project_plugins_need_trust_but_global_ones_do_not(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    write(home / ".ironhive" / "plugins.yaml", "plugins: {mine: {command: my-server}}\n")
    project_file = write(
        project / "plugins.yaml",
        "plugins:\n  local: {command: run-me, arguments: [--flag, 'two words']}\n"
        "  remote: {url: 'http://127.0.0.1:1/mcp'}\n",
    )
    merged = merge_plugin_files(load_plugin_files(project, home), project)
    store = TrustStore.for_home(home)

    denier = RecordingDecider(TrustDecision.DENY)
    outcome = await check_trust(merged, store, denier)
    assert [server.name for server in outcome.allowed] == ["mine"]
    refused, refused_remote = outcome.refused
    assert (refused.name, refused.state, refused.source) == ("local", "untrusted", project_file.absolute())
    assert (refused_remote.name, refused_remote.state) == ("remote", "untrusted")
    assert f"ironhive mcp trust {project_file.absolute()}" in (refused.last_error or "")
    (request,) = denier.requests
    assert request.path == project_file.absolute()
    assert request.commands == ("local: run-me --flag 'two words'", "remote: http http://127.0.0.1:1/mcp")
    assert request.changed is False

    once = RecordingDecider(TrustDecision.ONCE)
    assert [s.name for s in (await check_trust(merged, store, once)).allowed] == ["mine", "local", "remote"]
    assert store.records() == ()

    always = RecordingDecider(TrustDecision.ALWAYS)
    assert len((await check_trust(merged, store, always)).allowed) == 3
    assert store.is_trusted(project_file, merged.servers[1][1].sha256)
    never_asked = RecordingDecider(TrustDecision.DENY)
    assert len((await check_trust(merged, store, never_asked)).allowed) == 3
    assert never_asked.requests == []


async def test_a_changed_file_is_asked_about_again_and_a_failing_decider_denies(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project_file = write(project / "plugins.yaml", "plugins: {local: {command: one}}\n")
    store = TrustStore(tmp_path / "trust.json")
    store.trust(project_file)
    write(project_file, "plugins: {local: {command: two}}\n")
    merged = merge_plugin_files(load_plugin_files(project, tmp_path / "home"), project)
    broken = RecordingDecider(RuntimeError("no terminal"))
    outcome = await check_trust(merged, store, broken)
    assert outcome.allowed == ()
    assert broken.requests[0].changed is True
    assert await AlwaysDeny().decide(broken.requests[0]) == TrustDecision.DENY


async def test_an_http_only_project_file_needs_trust_too(tmp_path: Path) -> None:
    # An untrusted repository must not point tool calls (and what the model puts in them) at a server it names.
    project = tmp_path / "project"
    write(project / "plugins.yaml", "plugins: {remote: {transport: sse, url: 'http://127.0.0.1:1/sse'}}\n")
    merged = merge_plugin_files(load_plugin_files(project, tmp_path / "home"), project)
    decider = RecordingDecider(TrustDecision.DENY)
    outcome = await check_trust(merged, TrustStore(tmp_path / "trust.json"), decider)
    assert outcome.allowed == ()
    assert decider.requests[0].commands == ("remote: sse http://127.0.0.1:1/sse",)


async def test_the_project_trust_variable_trusts_the_file_for_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    write(project / "plugins.yaml", "plugins: {remote: {transport: sse, url: 'http://127.0.0.1:1/sse'}}\n")
    merged = merge_plugin_files(load_plugin_files(project, tmp_path / "home"), project)
    monkeypatch.setenv("IRONHIVE_TRUST_PROJECT", "1")
    decider = RecordingDecider(TrustDecision.DENY)
    store = TrustStore(tmp_path / "trust.json")
    assert [server.name for server in (await check_trust(merged, store, decider)).allowed] == ["remote"]
    assert decider.requests == [] and store.records() == ()


# -- real processes -----------------------------------------------------------------------------------------------


async def test_an_untrusted_project_file_never_starts_its_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ironhive.adapters.mcp")
    home, project, marker = tmp_path / "home", tmp_path / "project", tmp_path / "started"
    plugin_file = marker_plugin_file(project, marker)
    async with McpToolProvider.from_config(project, home=home) as provider:
        assert await provider.get_tools() == []
        (status,) = provider.status()
    assert not marker.exists()
    assert (status.name, status.state, status.connected) == ("marked", "untrusted", False)
    warning = next(record.getMessage() for record in caplog.records if record.levelno == logging.WARNING)
    assert str(plugin_file) in warning and "ironhive mcp trust" in warning


async def test_trusting_the_file_lets_it_start_and_editing_it_revokes_the_trust(tmp_path: Path) -> None:
    home, project, marker = tmp_path / "home", tmp_path / "project", tmp_path / "started"
    plugin_file = marker_plugin_file(project, marker)
    TrustStore.for_home(home).trust(plugin_file)
    async with McpToolProvider.from_config(project, home=home) as provider:
        tools = {tool.spec.name: tool for tool in await provider.get_tools()}
        assert await tools["mcp__marked__environment"].invoke({"name": "MCP_TEST_MARKER"}) == str(marker)
        assert provider.status()[0].state == "connected"
    assert marker.exists()

    marker.unlink()
    marker_plugin_file(project, marker, extra="\n")  # the same plugins, one more byte
    decider = RecordingDecider(TrustDecision.DENY)
    async with McpToolProvider.from_config(project, home=home, trust=decider) as provider:
        assert provider.status()[0].state == "untrusted"
    assert not marker.exists()
    assert decider.requests[0].changed is True


async def test_a_decider_that_trusts_always_starts_it_and_is_not_asked_again(tmp_path: Path) -> None:
    home, project, marker = tmp_path / "home", tmp_path / "project", tmp_path / "started"
    marker_plugin_file(project, marker)
    decider = RecordingDecider(TrustDecision.ALWAYS)
    async with McpToolProvider.from_config(project, home=home, trust=decider) as provider:
        assert provider.status()[0].state == "connected"
    assert marker.exists()
    assert len(decider.requests) == 1
    files = load_plugin_files(project, home)
    assert TrustStore.for_home(home).is_trusted(files[0].path, files[0].sha256)
