"""Plugin files: which file is used, the format and its defaults, clear errors, and merging global with project."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ironhive.adapters.mcp.plugin_config import load_plugin_files, merge_plugin_files, read_plugin_file
from ironhive.adapters.mcp.plugin_files import (
    PROJECT_PLUGIN_FILES,
    find_project_plugin_file,
    global_plugin_file,
    plugin_file_exists,
)
from ironhive.domain.errors import ConfigurationError

FULL = """\
defaultTimeoutMs: 12000
autoConnect: false
excludePlugins: [legacy]
plugins:
  harness:
    transport: stdio
    command: dotnet
    arguments: [run, --project, ../harness, 8080]
    environment: {DEBUG: 1, MODE: fast, VERBOSE: true}
    workingDirectory: tools
    autoReconnect: false
    timeoutMs: 60000
  web:
    transport: http
    url: http://127.0.0.1:9000/mcp
    headers: {Authorization: Bearer abc}
  legacy:
    command: old-server
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_first_existing_file_in_the_documented_order_is_used(tmp_path: Path) -> None:
    assert find_project_plugin_file(tmp_path) is None
    for relative in reversed(PROJECT_PLUGIN_FILES):
        write(tmp_path / relative, "plugins: {}\n")
        assert find_project_plugin_file(tmp_path) == (tmp_path / relative).absolute()
    assert PROJECT_PLUGIN_FILES[0] == ".ironhive/plugins.yaml"


def test_a_plugin_file_exists_exactly_when_one_would_be_read(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    assert not plugin_file_exists(project, home) and load_plugin_files(project, home) == ()
    write(project / "plugins.json", "{}")
    assert plugin_file_exists(project, home)
    (project / "plugins.json").unlink()
    write(global_plugin_file(home), "plugins: {}\n")
    assert plugin_file_exists(project, home)


def test_a_full_file_reads_with_every_key(tmp_path: Path) -> None:
    path = write(tmp_path / ".ironhive" / "plugins.yaml", FULL)
    plugin_file = read_plugin_file(path, "project")
    assert plugin_file.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert plugin_file.starts_processes
    merged = merge_plugin_files((plugin_file,), tmp_path)
    assert merged.auto_connect is False
    assert merged.excluded == ("legacy",)
    servers = {server.name: server for server, _ in merged.servers}
    assert list(servers) == ["harness", "web"]
    harness = servers["harness"]
    assert harness.transport == "stdio"
    assert harness.command == "dotnet"
    assert harness.arguments == ("run", "--project", "../harness", "8080")
    assert harness.environment == {"DEBUG": "1", "MODE": "fast", "VERBOSE": "true"}
    assert harness.working_directory == (tmp_path / "tools").absolute()
    assert harness.auto_reconnect is False
    assert harness.timeout == 60.0
    assert harness.source == path.absolute()
    web = servers["web"]
    assert (web.transport, web.url) == ("http", "http://127.0.0.1:9000/mcp")
    assert web.headers == {"Authorization": "Bearer abc"}
    assert web.timeout == 12.0
    assert web.working_directory is None
    assert web.auto_reconnect is True


def test_defaults_and_transport_inference(tmp_path: Path) -> None:
    path = write(tmp_path / "plugins.yml", "plugins:\n  a: {command: srv}\n  b: {url: 'http://127.0.0.1:1/mcp'}\n")
    merged = merge_plugin_files((read_plugin_file(path, "project"),), tmp_path)
    a, b = (server for server, _ in merged.servers)
    assert (a.transport, a.timeout, a.working_directory, a.arguments) == ("stdio", 30.0, tmp_path.absolute(), ())
    assert b.transport == "http"
    assert merged.auto_connect is True


def test_json_files_allow_comments_and_keys_are_case_insensitive(tmp_path: Path) -> None:
    text = """{
      // the harness
      "Plugins": {"Search": {"Transport": "SSE", "URL": "http://127.0.0.1:5/sse", "TimeoutMS": 1500,}},
      "defaulttimeoutms": 9000,
    }"""
    path = write(tmp_path / ".ironhive" / "plugins.json", text)
    plugin_file = read_plugin_file(path, "project")
    assert not plugin_file.starts_processes
    ((server, _),) = merge_plugin_files((plugin_file,), tmp_path).servers
    assert (server.name, server.transport, server.timeout) == ("Search", "sse", 1.5)


def test_an_empty_file_has_no_plugins(tmp_path: Path) -> None:
    plugin_file = read_plugin_file(write(tmp_path / "plugins.yaml", ""), "project")
    assert plugin_file.config.plugins == {}
    assert merge_plugin_files((plugin_file,), tmp_path).servers == ()


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("plugins.yaml", "plugins:\n  a: {command: [unclosed\n", "YAML syntax error at line"),
        ("plugins.json", '{"plugins": {"a": }}', "JSON syntax error at line 1"),
        ("plugins.yaml", "- just\n- a list\n", "the top level must be a mapping, not a list"),
        (
            "plugins.yaml",
            "plugins:\n  a: {transport: grpc, command: x}\n",
            "unknown transport 'grpc' (use stdio, http or sse)",
        ),
        ("plugins.yaml", "plugins:\n  a: {transport: stdio}\n", "plugins.a: a stdio plugin needs a 'command'"),
        ("plugins.yaml", "plugins:\n  a: {transport: http}\n", "plugins.a: an http plugin needs a 'url'"),
        ("plugins.yaml", "plugins:\n  a: {transport: sse, command: x}\n", "an sse plugin needs a 'url'"),
        ("plugins.yaml", "plugins:\n  a: {command: x, cmd: y}\n", "unknown key 'cmd' in plugins.a"),
        ("plugins.yaml", "plugins:\n  a: {command: x, timeoutMs: 0}\n", "plugins.a.timeoutMs"),
        ("plugins.yaml", "plugins:\n  a: {command: x, autoReconnect: maybe}\n", "plugins.a.autoReconnect"),
        ("plugins.yaml", "plugins:\n  a: just text\n", "plugins.a must be a mapping, not text"),
        ("plugins.yaml", "plugins: {a: {command: x}}\nplugin: {}\n", "unknown key 'plugin' in the top level"),
        ("plugins.yaml", "plugins: {a: {command: x, Command: y}}\n", "duplicate key 'Command' in plugins.a"),
    ],
)
def test_malformed_files_raise_configuration_errors_naming_file_and_problem(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = write(tmp_path / name, text)
    with pytest.raises(ConfigurationError) as raised:
        read_plugin_file(path, "project")
    message = str(raised.value)
    assert f"plugin file '{path}'" in message
    assert problem in message


def test_project_plugins_override_global_ones_and_exclusions_add_up(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    write(
        global_plugin_file(home),
        "defaultTimeoutMs: 5000\nautoConnect: false\nexcludePlugins: [g2]\n"
        "plugins:\n  shared: {command: global-shared}\n  g1: {command: g1}\n  g2: {command: g2}\n",
    )
    write(
        project / ".ironhive" / "plugins.yaml",
        "excludePlugins: [g1]\nplugins:\n  shared: {command: project-shared}\n  p1: {url: 'http://127.0.0.1:1/mcp'}\n",
    )
    files = load_plugin_files(project, home)
    assert [plugin_file.scope for plugin_file in files] == ["global", "project"]
    merged = merge_plugin_files(files, project)
    assert merged.auto_connect is False  # the project file does not set it
    assert merged.excluded == ("g2", "g1")
    servers = {server.name: (server, plugin_file.scope) for server, plugin_file in merged.servers}
    assert list(servers) == ["shared", "p1"]
    assert servers["shared"][0].command == "project-shared" and servers["shared"][1] == "project"
    assert servers["p1"][0].timeout == 5.0  # the global default applies to every file


def test_the_home_directory_as_project_reads_its_file_once_as_global(tmp_path: Path) -> None:
    write(global_plugin_file(tmp_path), "plugins: {a: {command: x}}\n")
    files = load_plugin_files(tmp_path, tmp_path)
    assert [plugin_file.scope for plugin_file in files] == ["global"]
    assert load_plugin_files(tmp_path / "elsewhere", tmp_path / "nohome") == ()
