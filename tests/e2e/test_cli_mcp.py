"""MCP plugins through the real CLI: a real server from PyPI (mcp-server-time), trust, and permission rules."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_ironhive

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
    trusted = run_ironhive("mcp", "trust", cwd=project, home=tmp_path / "home")
    assert trusted.returncode == 0, trusted.stderr
    allow_time_tools(project)
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
