"""The command sandbox: the probe's decision, bwrap's options, what a sandboxed command cannot do, and stopping
a command whose children left its process group."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
import uuid
from pathlib import Path

import pytest

from ironhive.adapters.config.schema import permission_rules, sandbox_section
from ironhive.adapters.diagnostics.sandbox import sandbox_check
from ironhive.adapters.tools.sandbox import (
    CommandSandbox,
    SandboxProbe,
    SandboxSettings,
    cached_probe,
    isolation_arguments,
    probe_bubblewrap,
)
from ironhive.adapters.tools.shell import ExecuteCommandTool
from ironhive.domain.errors import ConfigurationError, ToolError
from tests.support.components import bubblewrap

REAL = cached_probe(os.environ.get("PATH"))
needs_bwrap = bubblewrap(REAL)
UNAVAILABLE = SandboxProbe(executable=None, reason="bubblewrap (bwrap) is not installed")


class CountingProbe:
    """A probe that answers what it is given and counts how often it was asked."""

    def __init__(self, answer: SandboxProbe) -> None:
        self.answer = answer
        self.calls = 0

    def __call__(self) -> SandboxProbe:
        self.calls += 1
        return self.answer


def _sandboxed(root: Path, home: Path, *, network: bool = False, kill_grace: float = 2.0) -> ExecuteCommandTool:
    sandbox = CommandSandbox(SandboxSettings(network=network), home=home, environ={})
    return ExecuteCommandTool(root, sandbox=sandbox, kill_grace=kill_grace)


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def _pids_named(name: str) -> list[int]:
    """Host pids of the running processes whose argv[0] is ``name`` (a sandbox's own pids mean nothing here)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv0 = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if argv0 == name.encode() and _running(int(entry)):
            found.append(int(entry))
    return found


async def _wait_for_process(name: str) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids = await asyncio.to_thread(_pids_named, name)
        if pids:
            return pids[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no process named {name} appeared")


def _escaping_command(name: str) -> str:
    """A command whose grandchild leaves the process group with setsid and is orphaned at once (its parent, a
    subshell, exits), renamed so the host can find it."""
    return f"(setsid bash -c 'exec -a {name} sleep 1000' &); sleep 30"


# -- the decision --------------------------------------------------------------------------------------------------


async def test_an_unavailable_sandbox_runs_the_command_as_it_is_and_probes_once(tmp_path: Path) -> None:
    probe = CountingProbe(UNAVAILABLE)
    work = tmp_path / "work"
    work.mkdir()
    tool = ExecuteCommandTool(work, sandbox=CommandSandbox(home=tmp_path, environ={}, probe=probe))
    outside = tmp_path / "outside.txt"
    assert await tool.invoke({"command": f"echo written > {outside}"}) == "Exit code: 0\nOutput:\n(no output)"
    assert outside.read_text() == "written\n"  # no sandbox: only the rules stood in the way
    await tool.invoke({"command": "true"})
    assert probe.calls == 1


async def test_a_sandbox_turned_off_is_never_probed(tmp_path: Path) -> None:
    probe = CountingProbe(SandboxProbe(executable="/nonexistent/bwrap"))
    sandbox = CommandSandbox(SandboxSettings(enabled=False), probe=probe)
    assert await sandbox.command_line(["bash", "-c", "true"], tmp_path) == ["bash", "-c", "true"]
    assert probe.calls == 0
    assert sandbox.decide().reason == "turned off by permissions.sandbox.enabled"


async def test_an_available_sandbox_wraps_the_command_in_bwrap(tmp_path: Path) -> None:
    sandbox = CommandSandbox(home=tmp_path, environ={}, probe=lambda: SandboxProbe(executable="/opt/bwrap"))
    line = await sandbox.command_line(["bash", "-c", "make"], tmp_path)
    assert line[0] == "/opt/bwrap"
    assert line[-4:] == ["--", "bash", "-c", "make"]
    assert line[line.index("--bind") : line.index("--bind") + 3] == ["--bind", str(tmp_path), str(tmp_path)]


def test_the_probe_names_a_missing_bwrap(tmp_path: Path) -> None:
    found = probe_bubblewrap(str(tmp_path))
    assert not found.available
    assert found.reason == "bubblewrap (bwrap) is not installed"


def test_the_probe_runs_bwrap_and_reports_why_it_failed(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    found = probe_bubblewrap(str(tmp_path))
    assert found == SandboxProbe(
        executable=None, reason=f"{fake} cannot create the sandbox: bwrap: setting up uid map: Permission denied"
    )


def test_the_probe_runs_the_sandbox_options(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    record = tmp_path / "argv"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    fake.chmod(0o755)
    assert probe_bubblewrap(str(tmp_path)) == SandboxProbe(executable=str(fake))
    assert record.read_text().splitlines() == [*isolation_arguments(network=False), "true"]


# -- bwrap's options -----------------------------------------------------------------------------------------------


def test_secrets_of_the_home_are_covered_after_the_working_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x password y")
    runtime = tmp_path / "run-user"
    runtime.mkdir()
    arguments = CommandSandbox(home=home, environ={"XDG_RUNTIME_DIR": str(runtime), "TMPDIR": "/elsewhere"}).arguments(
        home
    )
    bind = arguments.index("--bind")
    assert arguments[bind + 1 : bind + 3] == [str(home), str(home)]
    ssh = arguments.index(str(home / ".ssh"))
    assert arguments[ssh - 1] == "--tmpfs" and ssh > bind
    netrc = arguments.index(str(home / ".netrc"))
    assert arguments[netrc - 2 : netrc] == ["--dev-bind", "/dev/null"]
    assert arguments[arguments.index(str(runtime)) - 1] == "--tmpfs"
    assert str(home / ".aws") not in arguments  # nothing there to hide
    assert arguments[-5:] == ["--setenv", "TMPDIR", "/tmp", "--chdir", str(home)]
    assert "--unshare-net" in arguments
    assert arguments[arguments.index("--cap-drop") + 1] == "ALL"


def test_network_on_keeps_the_network_namespace(tmp_path: Path) -> None:
    arguments = CommandSandbox(SandboxSettings(network=True), home=tmp_path, environ={}).arguments(tmp_path)
    assert "--unshare-net" not in arguments
    assert "--unshare-pid" in arguments and "--die-with-parent" in arguments


def test_a_working_directory_inside_a_protected_folder_is_not_hidden(tmp_path: Path) -> None:
    work = tmp_path / ".ironhive" / "scratch"
    work.mkdir(parents=True)
    arguments = CommandSandbox(home=tmp_path, environ={}).arguments(work)
    assert str(tmp_path / ".ironhive") not in arguments


# -- the config section and doctor -----------------------------------------------------------------------------


def test_the_sandbox_section_is_read_and_left_out_of_the_rules() -> None:
    section = {"sandbox": {"network": True}, "bash": [{"pattern": "*", "action": "allow"}]}
    settings = sandbox_section(section)
    assert (settings.enabled, settings.network) == (True, True)
    assert permission_rules(section) == {"bash": [{"pattern": "*", "action": "allow"}]}
    assert permission_rules({"sandbox": {"enabled": False}}) is None  # only the sandbox: the default rules stay
    assert sandbox_section(None) == sandbox_section({})
    with pytest.raises(ConfigurationError, match=r"permissions\.sandbox\.network: Input should be a valid boolean"):
        sandbox_section({"sandbox": {"network": "yes"}})
    with pytest.raises(ConfigurationError, match=r"unknown key 'netwrok'"):
        sandbox_section({"sandbox": {"netwrok": True}})


def test_doctor_warns_when_no_sandbox_can_run_and_passes_quietly_when_one_can() -> None:
    warning = sandbox_check(None, "/bin", verbose=False, probe=lambda _: UNAVAILABLE)
    assert warning is not None
    assert (warning.status, warning.message) == (
        "warning",
        "No sandbox: bubblewrap (bwrap) is not installed; commands run unsandboxed, guarded by the permission rules "
        "alone",
    )
    assert "bubblewrap" in str(warning.hint) and "user namespaces" in str(warning.hint)
    working = SandboxProbe(executable="/usr/bin/bwrap")
    assert sandbox_check(None, "/bin", verbose=False, probe=lambda _: working) is None
    verbose = sandbox_check({"sandbox": {"network": True}}, "/bin", verbose=True, probe=lambda _: working)
    assert verbose is not None
    assert verbose.message == "Commands run in bubblewrap (/usr/bin/bwrap), network on (permissions.sandbox.network)"
    off = sandbox_check({"sandbox": {"enabled": False}}, "/bin", verbose=False, probe=lambda _: working)
    assert off is not None and off.status == "warning" and off.message.startswith("Turned off")
    broken = sandbox_check({"sandbox": []}, "/bin", verbose=False, probe=lambda _: working)
    assert broken is not None and broken.status == "error"


# -- what a sandboxed command cannot do --------------------------------------------------------------------------


@needs_bwrap
async def test_a_sandboxed_command_writes_its_working_directory_and_nothing_else(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    sentinel = Path(sys.prefix) / f"sentinel-{uuid.uuid4().hex[:8]}"
    command = f"echo out > {outside}; echo in > inside.txt; cat inside.txt; touch {sentinel}"
    result = await _sandboxed(work, tmp_path / "home").invoke({"command": command})
    assert result.startswith("Exit code: 1\nOutput:\nin\nStderr:\n")
    assert result.endswith("Read-only file system")
    assert (work / "inside.txt").read_text() == "in\n"
    assert not outside.exists()  # it went to the sandbox's private /tmp, gone with it
    assert not sentinel.exists()


@needs_bwrap
async def test_a_sandboxed_command_cannot_read_the_protected_home_folders(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ironhive").mkdir(parents=True)
    (home / ".ironhive" / "config.yaml").write_text("openai:\n  apiKey: sk-secret\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / "notes.txt").write_text("visible")
    # The home inside the working directory: only the covers stand between the command and the files.
    result = await _sandboxed(tmp_path, home).invoke(
        {"command": "cat home/notes.txt; cat home/.ironhive/config.yaml home/.ssh/id_ed25519; ls -A home/.ssh"}
    )
    assert "visible" in result
    assert "sk-secret" not in result and "PRIVATE KEY" not in result
    assert "No such file or directory" in result


def _listener() -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    return server


def _connect_command(port: int) -> str:
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'hello')"
    return f'{sys.executable} -c "{code}"'


def _received(server: socket.socket) -> bytes:
    try:
        connection, _ = server.accept()
    except TimeoutError:
        return b""
    with connection:
        connection.settimeout(2)
        return connection.recv(100)


@needs_bwrap
async def test_the_network_is_off_in_the_sandbox_by_default(tmp_path: Path) -> None:
    with _listener() as server:
        port = server.getsockname()[1]
        result = await _sandboxed(tmp_path, tmp_path).invoke({"command": _connect_command(port)})
        assert "ConnectionRefusedError" in result  # its own loopback, where nothing listens
        assert await asyncio.to_thread(_received, server) == b""


@needs_bwrap
async def test_network_on_reaches_a_loopback_listener(tmp_path: Path) -> None:
    with _listener() as server:
        port = server.getsockname()[1]
        result = await _sandboxed(tmp_path, tmp_path, network=True).invoke({"command": _connect_command(port)})
        assert result.startswith("Exit code: 0")
        assert await asyncio.to_thread(_received, server) == b"hello"


@needs_bwrap
async def test_a_command_cannot_unmount_a_cover(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "key").write_text("PRIVATE KEY")
    result = await _sandboxed(tmp_path, home).invoke({"command": "umount home/.ssh; cat home/.ssh/key"})
    assert "PRIVATE KEY" not in result


# -- stopping children that left the process group -------------------------------------------------------------


async def test_a_setsid_child_is_killed_on_timeout_without_a_sandbox(tmp_path: Path) -> None:
    name = f"escapee-{uuid.uuid4().hex[:12]}"
    tool = ExecuteCommandTool(tmp_path, kill_grace=0.5)
    task = asyncio.create_task(tool.invoke({"command": _escaping_command(name), "timeout_ms": 1500}))
    pid = await _wait_for_process(name)
    with pytest.raises(ToolError, match=r"Command timed out after 1500ms"):
        await task
    assert not _running(pid)


async def test_a_setsid_child_that_clears_its_environment_is_killed_while_its_parent_lives(tmp_path: Path) -> None:
    name = f"escapee-{uuid.uuid4().hex[:12]}"
    command = f"setsid env -i bash -c 'exec -a {name} sleep 1000' & sleep 30"
    task = asyncio.create_task(ExecuteCommandTool(tmp_path, kill_grace=0.5).invoke({"command": command}))
    pid = await _wait_for_process(name)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not _running(pid)


@needs_bwrap
async def test_a_setsid_child_is_killed_on_timeout_and_cancellation_in_the_sandbox(tmp_path: Path) -> None:
    name = f"escapee-{uuid.uuid4().hex[:12]}"
    tool = _sandboxed(tmp_path, tmp_path, kill_grace=0.5)
    task = asyncio.create_task(tool.invoke({"command": _escaping_command(name), "timeout_ms": 1500}))
    pid = await _wait_for_process(name)
    with pytest.raises(ToolError, match=r"Command timed out after 1500ms"):
        await task
    assert not _running(pid)

    name = f"escapee-{uuid.uuid4().hex[:12]}"
    task = asyncio.create_task(tool.invoke({"command": _escaping_command(name)}))
    pid = await _wait_for_process(name)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not _running(pid)
