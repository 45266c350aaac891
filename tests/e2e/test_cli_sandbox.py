"""The command sandbox through the real ``ironhive -p`` with a scripted model: a command the user's rules wrongly
allow still cannot write outside the working directory, read ``~/.ironhive`` or reach the network, and a command's
``setsid`` child is stopped with it; where no sandbox can run, commands run as before and ``doctor`` says so."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ironhive.adapters.tools.sandbox import cached_probe
from tests.support.cli import clean_environment, ironhive_executable, run_ironhive
from tests.support.components import bubblewrap

REAL = cached_probe(os.environ.get("PATH"))
needs_bwrap = bubblewrap(REAL)

ALLOW_EVERYTHING = 'permissions:\n  bash:\n    - pattern: "*"\n      action: allow\n'
"""A user rule that wrongly allows every command: only the sandbox stands in the way."""


class Workspace:
    """A project folder holding the user's HOME (so only the sandbox's covers hide ``~/.ironhive``), a sentinel path
    outside the project, and the user's config."""

    def __init__(self, root: Path, *, sandbox: str = "") -> None:
        self.root = root
        self.project = root / "project"
        self.home = self.project / "home"
        (self.home / ".ironhive").mkdir(parents=True)
        self.config = self.home / ".ironhive" / "config.yaml"
        self.config.write_text(ALLOW_EVERYTHING + sandbox + "openai:\n  apiKey: sk-sandbox-secret\n")
        (self.home / "notes.txt").write_text("notes-visible")
        self.outside = root / f"sentinel-{uuid.uuid4().hex[:8]}"

    def script(self, *commands: dict[str, object]) -> Path:
        steps: list[dict[str, object]] = [
            {"tool_calls": [{"name": "execute_command", "arguments": arguments, "id": f"call_{index}"}]}
            for index, arguments in enumerate(commands, start=1)
        ]
        steps.append({"text": "Done."})
        path = self.root / "script.json"
        path.write_text(json.dumps({"steps": steps}))
        return path

    def arguments(self, *commands: dict[str, object]) -> list[str]:
        return ["--provider", "scripted", "-m", str(self.script(*commands)), "-p", "do it", "-o", "jsonl"]

    def run(self, *commands: dict[str, object], env: dict[str, str] | None = None) -> list[str]:
        """The results of the commands, in order."""
        completed = run_ironhive(*self.arguments(*commands), cwd=self.project, home=self.home, env=env, timeout=60)
        assert completed.returncode == 0, completed.stderr
        return _results(completed.stdout)

    def doctor(self, env: dict[str, str] | None = None) -> dict[str, object]:
        completed = run_ironhive("doctor", "--json", cwd=self.project, home=self.home, env=env, timeout=60)
        report = json.loads(completed.stdout)
        assert isinstance(report, dict)
        return report


def _results(stdout: str) -> list[str]:
    lines = [json.loads(line) for line in stdout.splitlines()]
    results = [line for line in lines if line["type"] == "tool_result"]
    assert all(result["name"] == "execute_command" for result in results)
    return [str(result["result"]) for result in results]


def _sandbox_check(report: dict[str, object]) -> dict[str, object] | None:
    checks = report["checks"]
    assert isinstance(checks, list)
    found = [check for check in checks if check["name"] == "Command sandbox"]
    return found[0] if found else None


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    with server:
        yield server


def _connect(server: socket.socket) -> dict[str, object]:
    port = server.getsockname()[1]
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'hello')"
    return {"command": f'{sys.executable} -c "{code}"'}


def _received(server: socket.socket) -> bytes:
    try:
        connection, _ = server.accept()
    except TimeoutError:
        return b""
    with connection:
        connection.settimeout(2)
        return connection.recv(100)


def _without_bwrap(root: Path) -> dict[str, str]:
    """A PATH whose first ``bwrap`` fails as it does where user namespaces are off: the real probe must say no."""
    fake = root / "fake-bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    return {"PATH": f"{fake}{os.pathsep}{os.environ.get('PATH', '')}"}


@needs_bwrap
def test_a_wrongly_allowed_command_cannot_write_outside_nor_read_the_user_config(tmp_path: Path) -> None:
    work = Workspace(tmp_path)
    beside_ironhive = Path(sys.prefix) / f"sentinel-{uuid.uuid4().hex[:8]}"
    temporary, installation, read, inside = work.run(
        {"command": f"touch {work.outside}"},
        {"command": f"touch {beside_ironhive}"},
        {"command": "cat home/notes.txt home/.ironhive/config.yaml"},
        {"command": "touch made-here; ls made-here"},
    )
    assert temporary.startswith("Exit code: 0")  # it wrote to the sandbox's private /tmp, gone with it
    assert not work.outside.exists()
    assert installation.startswith("Exit code: 1") and installation.endswith("Read-only file system")
    assert not beside_ironhive.exists()
    assert "notes-visible" in read  # the home is there; only its secrets are covered
    assert "No such file or directory" in read and "sk-sandbox-secret" not in read
    assert inside == "Exit code: 0\nOutput:\nmade-here"
    assert (work.project / "made-here").is_file()


@needs_bwrap
def test_the_network_is_off_unless_the_config_turns_it_on(tmp_path: Path, listener: socket.socket) -> None:
    [refused] = Workspace(tmp_path / "off").run(_connect(listener))
    assert "ConnectionRefusedError" in refused
    assert _received(listener) == b""

    [reached] = Workspace(tmp_path / "on", sandbox="  sandbox:\n    network: true\n").run(_connect(listener))
    assert reached.startswith("Exit code: 0")
    assert _received(listener) == b"hello"


def test_without_a_sandbox_commands_run_as_before_and_doctor_warns(tmp_path: Path) -> None:
    work = Workspace(tmp_path)
    environment = _without_bwrap(tmp_path)
    [write] = work.run({"command": f"touch {work.outside}"}, env=environment)
    assert write == "Exit code: 0\nOutput:\n(no output)"
    assert work.outside.exists()  # only the rules guard an unsandboxed command, and this one allowed it
    check = _sandbox_check(work.doctor(env=environment))
    assert check is not None
    assert check["status"] == "warning"
    assert check["message"] == (
        f"No sandbox: {tmp_path / 'fake-bin' / 'bwrap'} cannot create the sandbox: bwrap: No permissions to creating "
        "new namespace; commands run unsandboxed, guarded by the permission rules alone"
    )
    assert "Install bubblewrap" in str(check["hint"])


@needs_bwrap
def test_a_sandbox_turned_off_runs_commands_unsandboxed_and_doctor_says_so(tmp_path: Path) -> None:
    work = Workspace(tmp_path, sandbox="  sandbox:\n    enabled: false\n")
    [write] = work.run({"command": f"touch {work.outside}"})
    assert write == "Exit code: 0\nOutput:\n(no output)"
    assert work.outside.exists()
    check = _sandbox_check(work.doctor())
    assert check is not None
    assert (check["status"], check["message"]) == (
        "warning",
        "Turned off by permissions.sandbox.enabled: false; commands run unsandboxed, guarded by the permission rules "
        "alone",
    )
    assert _sandbox_check(Workspace(tmp_path / "default").doctor()) is None  # a working sandbox is a quiet pass


def _pids_named(name: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv0 = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[0]
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if argv0 == name.encode() and stat[stat.rfind(")") + 2] not in "ZX":
            found.append(int(entry))
    return found


@pytest.mark.parametrize("sandbox", ["", "  sandbox:\n    enabled: false\n"], ids=["sandboxed", "unsandboxed"])
def test_a_setsid_child_is_stopped_when_its_command_times_out(tmp_path: Path, sandbox: str) -> None:
    if not sandbox:
        needs_bwrap.require()
    work = Workspace(tmp_path, sandbox=sandbox)
    name = f"escapee-{uuid.uuid4().hex[:12]}"
    command = f"(setsid bash -c 'exec -a {name} sleep 1000' &); sleep 30"
    with subprocess.Popen(
        [ironhive_executable(), *work.arguments({"command": command, "timeout_ms": 3000})],
        cwd=work.project,
        env=clean_environment(work.home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        deadline = time.monotonic() + 30
        pids: list[int] = []
        while not pids and time.monotonic() < deadline:
            pids = _pids_named(name)
            time.sleep(0.05)
        stdout, stderr = process.communicate(timeout=60)
    assert pids, "the setsid child never started"
    assert process.returncode == 0, stderr
    [result] = _results(stdout)
    assert result.startswith("Command timed out after 3000ms")
    assert _pids_named(name) == []
