"""The ``ironhive mcp list|trust|untrust`` commands, run in-process through a cyclopts app with a scratch HOME."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cyclopts import App, Parameter

from ironhive.adapters.mcp.trust import TrustStore
from ironhive.cli.mcp_commands import register
from tests.adapters.mcp.conftest import SERVERS


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory as the working directory, with a scratch home."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    return project


def run(*args: str) -> int:
    app = App(name="ironhive", default_parameter=Parameter(negative=()), result_action="return_value")
    register(app)
    result = app(list(args), exit_on_error=False)
    assert isinstance(result, int)
    return result


def write_plugins(project: Path, marker: Path) -> Path:
    path = project / ".ironhive" / "plugins.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "plugins:\n"
        "  marked:\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    arguments: [{json.dumps(str(SERVERS / 'failing_server.py'))}]\n"
        f"    environment: {{MCP_TEST_MARKER: {json.dumps(str(marker))}}}\n"
        "  remote: {url: 'http://127.0.0.1:9/mcp', timeoutMs: 2000}\n",
        encoding="utf-8",
    )
    return path


def listing(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    capsys.readouterr()
    assert run("mcp", "list", "-o", "json", *extra) == 0
    document = json.loads(capsys.readouterr().out)
    assert isinstance(document, dict)
    return document


def test_without_plugin_files_list_says_how_to_add_some_and_trust_fails(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("mcp", "list") == 0
    assert "No MCP plugins configured" in capsys.readouterr().out
    assert run("mcp", "trust") == 1
    assert f"No plugin file in {project}" in capsys.readouterr().err
    assert run("mcp", "trust", "missing.yaml") == 1
    assert "No such file" in capsys.readouterr().err


def test_trust_records_the_file_and_an_edit_shows_as_changed(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_plugins(project, tmp_path / "marker")
    offline = listing(capsys, "--offline")
    assert offline["plugins"] == [
        {"name": "marked", "transport": "stdio", "source": str(path), "trust": "untrusted"},
        {"name": "remote", "transport": "http", "source": str(path), "trust": "untrusted"},
    ]

    assert run("mcp", "trust") == 0
    out = capsys.readouterr().out
    assert f"Trusted {path}" in out
    assert f"marked: {sys.executable} {SERVERS / 'failing_server.py'}" in out
    assert TrustStore.for_home(tmp_path / "home").records()[0].path == path.resolve()
    assert listing(capsys, "--offline")["plugins"][0]["trust"] == "trusted"  # type: ignore[index]

    path.write_text(path.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert listing(capsys, "--offline")["plugins"][0]["trust"] == "changed"  # type: ignore[index]

    assert run("mcp", "untrust", str(path)) == 0
    assert "No longer trusted" in capsys.readouterr().out
    assert listing(capsys, "--offline")["plugins"][0]["trust"] == "untrusted"  # type: ignore[index]


def test_list_checks_health_without_starting_untrusted_plugins(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "marker"
    write_plugins(project, marker)
    plugins = listing(capsys)["plugins"]
    assert isinstance(plugins, list)
    marked, remote = plugins
    assert (marked["state"], marked["toolCount"]) == ("untrusted", 0)
    assert "ironhive mcp trust" in marked["lastError"]
    assert remote["state"] == "untrusted"  # an untrusted file's http plugins do not connect either
    assert not marker.exists()

    assert run("mcp", "trust") == 0
    capsys.readouterr()
    assert listing(capsys)["plugins"][1]["state"] == "failed"  # type: ignore[index]  # trusted: it tries, and fails
    assert run("mcp", "list") == 0
    table = capsys.readouterr().out
    assert marker.exists()
    assert "Project plugin file:" in table and "(trusted)" in table
    row = next(line for line in table.splitlines() if line.startswith("marked"))
    assert row.split()[:5] == ["marked", "stdio", "trusted", "connected", "6"]


def test_a_malformed_file_is_reported_and_the_global_file_needs_no_trust(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "plugins.yaml").write_text("plugins:\n  a: {transport: carrier-pigeon}\n", encoding="utf-8")
    assert run("mcp", "list") == 1
    assert "unknown transport 'carrier-pigeon'" in capsys.readouterr().err
    assert run("mcp", "trust") == 1
    assert "Fix the file before trusting it" in capsys.readouterr().err
    global_file = tmp_path / "home" / ".ironhive" / "plugins.yaml"
    global_file.parent.mkdir(parents=True)
    global_file.write_text("plugins: {}\n", encoding="utf-8")
    assert run("mcp", "trust", str(global_file)) == 0
    assert "always trusted" in capsys.readouterr().out
