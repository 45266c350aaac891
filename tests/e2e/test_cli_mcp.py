"""MCP plugins through the real CLI: a real server from PyPI (mcp-server-time), trust, and permission rules."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.support.cli import run_ironhive
from tests.support.components import MCP_NPM_PREFIX, MCP_NPM_SERVERS

pytest.importorskip("mcp_server_time")

SCRIPT = {
    "steps": [
        {"tool_calls": [{"name": "mcp__time__get_current_time", "arguments": {"timezone": "UTC"}, "id": "c1"}]},
        {"text": "done"},
    ]
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".ironhive").mkdir(parents=True)
    (root / ".ironhive" / "plugins.yaml").write_text(
        "plugins:\n  time:\n    transport: stdio\n"
        f"    command: {sys.executable}\n    arguments: [-m, mcp_server_time, --local-timezone, UTC]\n"
    )
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    return root


def tool_results(tmp_path: Path, project: Path) -> list[dict[str, object]]:
    completed = run_ironhive(
        "--provider",
        "scripted",
        "-m",
        str(tmp_path / "script.json"),
        "-p",
        "What time is it?",
        "-o",
        "jsonl",
        cwd=project,
        home=tmp_path / "home",
    )
    assert completed.returncode == 0, completed.stderr
    return [line for line in map(json.loads, completed.stdout.splitlines()) if line["type"] == "tool_result"]


def allow_time_tools(project: Path) -> None:
    (project / ".ironhive" / "permissions.yaml").write_text(
        'permissions:\n  default_action: ask\n  mcp_tools:\n    - { pattern: "mcp__time__*", action: allow }\n'
    )


def test_a_trusted_plugin_serves_its_tools_under_the_mcp_prefix(tmp_path: Path, project: Path) -> None:
    allow_time_tools(project)
    # The project's permission file widens the rules, so it needs trust as much as the plugin file does.
    trusted = run_ironhive("trust", cwd=project, home=tmp_path / "home")
    assert trusted.returncode == 0, trusted.stderr
    [result] = tool_results(tmp_path, project)
    assert result["success"] is True
    assert json.loads(str(result["result"]))["timezone"] == "UTC"


def test_default_rules_ask_for_mcp_tools_that_are_not_list_get_or_help(tmp_path: Path, project: Path) -> None:
    run_ironhive("mcp", "trust", cwd=project, home=tmp_path / "home")
    [result] = tool_results(tmp_path, project)
    assert str(result["result"]).startswith("Approval rejected: 'mcp__time__get_current_time' requires approval")


def test_an_untrusted_project_plugin_file_never_starts_its_process(tmp_path: Path, project: Path) -> None:
    marker = tmp_path / "started.txt"
    (project / ".ironhive" / "plugins.yaml").write_text(
        "plugins:\n  evil:\n    transport: stdio\n"
        f"    command: {sys.executable}\n    arguments: [-c, \"open(r'{marker}', 'w').write('ran')\"]\n"
    )
    allow_time_tools(project)
    completed = run_ironhive("--provider", "scripted", "-p", "hello", cwd=project, home=tmp_path / "home")
    assert completed.returncode == 0, completed.stderr
    assert not marker.exists()
    assert "ironhive mcp trust" in completed.stderr


NPM_MODULES = MCP_NPM_PREFIX / "node_modules"


@MCP_NPM_SERVERS
def test_the_npm_memory_and_filesystem_servers_through_the_cli(tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node is not None
    memory = NPM_MODULES / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    filesystem = NPM_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    project = tmp_path / "project"
    (project / ".ironhive").mkdir(parents=True)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "hello.txt").write_text("hello from the filesystem server\n")
    (project / ".ironhive" / "plugins.yaml").write_text(
        "plugins:\n"
        f"  memory:\n    command: {node}\n    arguments: [{memory}]\n"
        f"    environment: {{MEMORY_FILE_PATH: {tmp_path / 'memory.jsonl'}}}\n"
        f"  files:\n    command: {node}\n    arguments: [{filesystem}, {shared}]\n"
    )
    (project / ".ironhive" / "permissions.yaml").write_text(
        'permissions:\n  default_action: deny\n  mcp_tools:\n    - { pattern: "mcp__memory__*", action: allow }\n'
        '    - { pattern: "mcp__files__read_*", action: allow }\n'
    )
    script = {
        "steps": [
            {
                "tool_calls": [
                    {
                        "name": "mcp__memory__create_entities",
                        "id": "c1",
                        "arguments": {
                            "entities": [
                                {"name": "ironhive", "entityType": "project", "observations": ["hosts agents"]}
                            ]
                        },
                    }
                ]
            },
            {"tool_calls": [{"name": "mcp__memory__read_graph", "id": "c2", "arguments": {}}]},
            {
                "tool_calls": [
                    {"name": "mcp__files__read_text_file", "id": "c3", "arguments": {"path": str(shared / "hello.txt")}}
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "mcp__files__write_file",
                        "id": "c4",
                        "arguments": {"path": str(shared / "new.txt"), "content": "x"},
                    }
                ]
            },
            {"text": "done"},
        ]
    }
    (tmp_path / "script.json").write_text(json.dumps(script))
    assert run_ironhive("trust", cwd=project, home=tmp_path / "home").returncode == 0  # plugins and permissions
    completed = run_ironhive(
        "--provider",
        "scripted",
        "-m",
        str(tmp_path / "script.json"),
        "-p",
        "go",
        "-o",
        "jsonl",
        cwd=project,
        home=tmp_path / "home",
        timeout=180,
    )
    assert completed.returncode == 0, completed.stderr
    results = [line for line in map(json.loads, completed.stdout.splitlines()) if line["type"] == "tool_result"]
    assert [result["success"] for result in results] == [True, True, True, False]
    assert "hosts agents" in str(results[1]["result"])
    assert "hello from the filesystem server" in str(results[2]["result"])
    assert str(results[3]["result"]).startswith("Permission denied: ")
    assert not (shared / "new.txt").exists()


def test_mcp_list_json(tmp_path: Path, project: Path, snapshot: SnapshotAssertion) -> None:
    before = run_ironhive("mcp", "list", "-o", "json", "--offline", cwd=project, home=tmp_path / "home")
    run_ironhive("mcp", "trust", cwd=project, home=tmp_path / "home")
    after = run_ironhive("mcp", "list", "-o", "json", "--offline", cwd=project, home=tmp_path / "home")
    normalised = [
        re.sub(r'"sha256": "[0-9a-f]{64}"', '"sha256": "<sha256>"', result.stdout)
        .replace(str(tmp_path), "<tmp>")
        .replace(sys.executable, "<python>")
        for result in (before, after)
    ]
    assert normalised == snapshot
