"""The warm path end to end: the real ``ironhive`` handing its runs to the warm process, against loopback models.

Every test gets its own HOME and runtime directory (``XDG_RUNTIME_DIR``), turns the warm process on with
``IRONHIVE_DAEMON=1`` (the suite turns it off everywhere else) and stops it in teardown. Whether a run went through
the warm process is read from ``ironhive daemon status`` (its count of runs served).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ironhive.daemon.client import connect
from ironhive.daemon.protocol import receive, send
from tests.support.cli import clean_environment, ironhive_executable, run_ironhive
from tests.support.openai_server import LoopbackOpenAIServer

START_TIMEOUT = 90.0


class Warm:
    """A HOME, a runtime directory and helpers to run ``ironhive`` with the warm process on."""

    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.runtime = tmp_path / "run"
        self.runtime.mkdir(mode=0o700)
        self.work = tmp_path / "work"
        self.work.mkdir()

    @property
    def directory(self) -> Path:
        return self.runtime / "ironhive"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {"IRONHIVE_DAEMON": "1", "XDG_RUNTIME_DIR": str(self.runtime), **(extra or {})}

    def run(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, stdin: str | None = None):
        return run_ironhive(*args, cwd=cwd or self.work, home=self.home, env=self.env(env), stdin=stdin)

    def status(self, env: dict[str, str] | None = None) -> dict[str, int] | None:
        """The server's pid and runs served, or ``None`` when none answers."""
        completed = self.run("daemon", "status", env=env)
        found = re.search(r"pid (\d+), .*?(\d+) runs served", completed.stdout)
        return {"pid": int(found[1]), "served": int(found[2])} if completed.returncode == 0 and found else None

    def wait_for_server(self, other_than: int | None = None, env: dict[str, str] | None = None) -> dict[str, int]:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            status = self.status(env)
            if status is not None and status["pid"] != other_than:
                return status
            time.sleep(0.2)
        log = self.directory / "server.log"
        raise AssertionError(f"no warm process; log: {log.read_text() if log.exists() else '-'}")

    def start(self, server: LoopbackOpenAIServer, env: dict[str, str] | None = None) -> dict[str, int]:
        """A first (direct) run that starts the warm process, then wait until it serves."""
        server.enqueue_text("warming")
        assert self.warm_run_env(server, "-p", "hi", env=env or {}).returncode == 0
        return self.wait_for_server(env=env)

    def warm_run_env(self, server: LoopbackOpenAIServer, *args: str, **kwargs: object):
        return self.run(*args, env={**openai_env(server), **kwargs.pop("env", {})}, **kwargs)  # type: ignore[arg-type]

    def server_status(self) -> dict[str, object]:
        """The warm process's own status message (with the pid of the process waiting for the next run)."""
        sock = connect(str(self.directory), os.getuid())
        assert sock is not None, "no warm process"
        try:
            send(sock, {"op": "status"})
            return receive(sock)
        finally:
            sock.close()

    def next_spare(self, other_than: object = None) -> int:
        """The pid of the process forked ahead for the next run, once it is one other than ``other_than``."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            spare = self.server_status()["spare"]
            if isinstance(spare, int) and spare != other_than:
                return spare
            time.sleep(0.05)
        raise AssertionError("no process forked ahead")

    def stop(self) -> None:
        """``ironhive daemon stop``, then end every server this test's directory logged that is still there."""
        self.run("daemon", "stop")
        log = self.directory / "server.log"
        pids = {int(pid) for pid in re.findall(r"\[(\d+)\] serving", log.read_text())} if log.exists() else set()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in pids:
            if _alive(pid) and str(self.directory) in Path(f"/proc/{pid}/cmdline").read_text():
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def openai_env(server: LoopbackOpenAIServer, model: str = "gpt-test") -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-loopback-test", "OPENAI_MODEL": model, "OPENAI_ENDPOINT": server.base_url}


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Warm]:
    helper = Warm(tmp_path)
    try:
        yield helper
    finally:
        helper.stop()


def test_runs_are_served_warm_with_their_exit_codes_0_1_and_2(warm: Warm) -> None:
    with LoopbackOpenAIServer() as server:
        first = warm.start(server)
        server.enqueue_text("Hello from the child.")
        ok = warm.warm_run_env(server, "-p", "hi", "-o", "json")
        server.enqueue_auth_error()
        failed = warm.warm_run_env(server, "-p", "hi", "-o", "json")
        usage = warm.warm_run_env(server, "-p", "hi", "--no-such-flag")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["content"] == "Hello from the child."
    assert failed.returncode == 1 and json.loads(failed.stdout)["code"] == 1
    assert usage.returncode == 2 and "--no-such-flag" in usage.stderr + usage.stdout
    assert warm.status() == {"pid": first["pid"], "served": first["served"] + 3}


def test_stdin_is_piped_through_and_stdout_is_a_pipe(warm: Warm) -> None:
    with LoopbackOpenAIServer() as server:
        first = warm.start(server)
        server.enqueue_text("Piped answer.")
        completed = warm.warm_run_env(server, "-o", "json", stdin="What came through the pipe?")
        request = server.requests[-1]
    assert completed.returncode == 0, completed.stderr
    assert request["messages"][-1] == {"role": "user", "content": "What came through the pipe?"}
    assert json.loads(completed.stdout)["content"] == "Piped answer."
    assert warm.status() == {"pid": first["pid"], "served": first["served"] + 1}


def _on_terminal(warm: Warm, env: dict[str, str], *args: str) -> tuple[int, bytes]:
    """Run ``ironhive *args`` with stdin, stdout and stderr on a pseudo-terminal; its exit code and output."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [ironhive_executable(), *args],
        cwd=warm.work,
        env=clean_environment(warm.home, {"TERM": "xterm", "COLUMNS": "100", **env}),
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        start_new_session=True,
    )
    os.close(terminal)
    output = b""
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], 60)
            assert ready, f"no output; saw {output!r}"
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        return process.wait(timeout=60), output
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_terminal_is_seen_as_a_terminal_and_a_pipe_as_a_pipe(warm: Warm) -> None:
    with LoopbackOpenAIServer() as server:
        first = warm.start(server)  # the warming run stored a session: `sessions` lists it
        env = {**warm.env(), **openai_env(server)}
        warm_code, warm_output = _on_terminal(warm, env, "sessions")
        direct_code, direct_output = _on_terminal(warm, {**env, "IRONHIVE_DAEMON": "0"}, "sessions")
        piped = warm.warm_run_env(server, "sessions")
    assert warm_code == direct_code == 0
    assert warm_output == direct_output  # the rich table, as a direct run draws it on a terminal
    assert "─" in warm_output.decode()
    assert piped.returncode == 0 and "─" not in piped.stdout  # the plain table on a pipe
    assert warm.status() == {"pid": first["pid"], "served": first["served"] + 2}


def test_ctrl_c_reaches_the_child_and_the_run_exits_130(warm: Warm) -> None:
    with LoopbackOpenAIServer() as server:
        first = warm.start(server)
        server.enqueue_text("slow " * 400, chunks=["slow "] * 400, chunk_delay=0.05)
        process = subprocess.Popen(
            [ironhive_executable(), "-p", "hi", "-o", "jsonl"],
            cwd=warm.work,
            env=clean_environment(warm.home, {**warm.env(), **openai_env(server)}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]  # start, then the first text delta
        assert b'"type":"text"' in lines[1]
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl+C: the client's group
        rest, errors = process.communicate(timeout=60)
    assert process.returncode == 130, errors
    assert json.loads(rest.splitlines()[-1])["type"] == "error"  # the cancelled run's last line
    assert warm.status() == {"pid": first["pid"], "served": first["served"] + 1}


def test_env_cwd_and_project_config_do_not_leak_between_runs(warm: Warm, tmp_path: Path) -> None:
    projects = {name: tmp_path / name for name in ("a", "b")}
    with LoopbackOpenAIServer() as common, LoopbackOpenAIServer() as server_a, LoopbackOpenAIServer() as server_b:
        first = warm.start(common)
        for name, server in (("a", server_a), ("b", server_b)):
            project = projects[name]
            (project / ".ironhive").mkdir(parents=True)
            model = "" if name == "a" else "  model: config-model-b\n"
            (project / ".ironhive" / "config.yaml").write_text(f"openai:\n  endpoint: {server.base_url}\n{model}")
            (project / "README.md").write_text(f"This is project {name}.\n")
            server.enqueue_tool_calls([("call_1", "read_file", {"path": "README.md"})])
            server.enqueue_text(f"Done {name}.")
        base = {"OPENAI_API_KEY": "sk-loopback-test", "IRONHIVE_TRUST_PROJECT": "1"}
        run_a = warm.run("-p", "read it", "-o", "json", cwd=projects["a"], env={**base, "OPENAI_MODEL": "env-model-a"})
        run_b = warm.run("-p", "read it", "-o", "json", cwd=projects["b"], env=base)  # no OPENAI_MODEL this time
        requests_a, requests_b = server_a.requests, server_b.requests
    assert run_a.returncode == 0, run_a.stderr
    assert run_b.returncode == 0, run_b.stderr
    assert [request["model"] for request in requests_a] == ["env-model-a", "env-model-a"]
    assert [request["model"] for request in requests_b] == ["config-model-b", "config-model-b"]
    assert requests_a[1]["messages"][-1]["content"] == "This is project a.\n"
    assert requests_b[1]["messages"][-1]["content"] == "This is project b.\n"
    assert warm.status() == {"pid": first["pid"], "served": first["served"] + 2}


def test_a_server_of_another_install_is_replaced(warm: Warm, tmp_path: Path) -> None:
    site = tmp_path / "site"  # a directory on sys.path, as site-packages is
    site.mkdir()
    env = {"PYTHONPATH": str(site)}
    with LoopbackOpenAIServer() as server:
        first = warm.start(server, env=env)
        (site / "newly_installed.py").write_text("")  # a dependency installed: the directory's mtime changes
        server.enqueue_text("Answered directly.")
        during = warm.warm_run_env(server, "-p", "hi", "-o", "json", env=env)
        second = warm.wait_for_server(other_than=first["pid"], env=env)
        server.enqueue_text("Answered by the new one.")
        after = warm.warm_run_env(server, "-p", "hi", "-o", "json", env=env)
    assert during.returncode == 0 and json.loads(during.stdout)["content"] == "Answered directly."
    assert not _alive(first["pid"])
    assert after.returncode == 0 and json.loads(after.stdout)["content"] == "Answered by the new one."
    assert warm.status(env) == {"pid": second["pid"], "served": second["served"] + 1}


def test_a_killed_server_means_a_direct_run(warm: Warm) -> None:
    with LoopbackOpenAIServer() as server:
        first = warm.start(server)
        os.kill(first["pid"], signal.SIGKILL)
        while _alive(first["pid"]):
            time.sleep(0.05)
        assert (warm.directory / "ironhive.sock").exists()  # left behind: a stale socket
        server.enqueue_text("Still answered.")
        completed = warm.warm_run_env(server, "-p", "hi", "-o", "json")
        replacement = warm.wait_for_server(other_than=first["pid"])
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["content"] == "Still answered."
    assert completed.stderr == ""
    assert replacement["served"] == 0


def test_a_server_dying_during_a_run_does_not_run_it_twice(warm: Warm) -> None:
    with LoopbackOpenAIServer() as server:
        first = warm.start(server)
        server.enqueue_text("slow " * 40, chunks=["slow "] * 40, chunk_delay=0.05)
        process = subprocess.Popen(
            [ironhive_executable(), "-p", "hi", "-o", "jsonl"],
            cwd=warm.work,
            env=clean_environment(warm.home, {**warm.env(), **openai_env(server)}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None
        process.stdout.readline()
        os.kill(first["pid"], signal.SIGKILL)
        rest, errors = process.communicate(timeout=60)
        chat_requests = len(server.requests)
    assert process.returncode == 1
    assert "warm process ended during the run" in errors.decode()
    assert json.loads(rest.splitlines()[-1])["type"] == "done"  # the child finished its run
    assert chat_requests == 2  # the warming run and this one: never repeated


def test_no_daemon_flag_and_variable_run_directly(warm: Warm) -> None:
    with LoopbackOpenAIServer() as server:
        first = warm.start(server)
        server.enqueue_text("One.")
        flagged = warm.warm_run_env(server, "--no-daemon", "-p", "hi", "-o", "json")
        server.enqueue_text("Two.")
        variable = warm.warm_run_env(server, "-p", "hi", "-o", "json", env={"IRONHIVE_DAEMON": "0"})
    assert json.loads(flagged.stdout)["content"] == "One."
    assert json.loads(variable.stdout)["content"] == "Two."
    assert warm.status() == first


def test_daemon_enabled_false_in_the_user_config_stops_and_never_starts_it(warm: Warm) -> None:
    with LoopbackOpenAIServer() as server:
        first = warm.start(server)
        env = {key: value for key, value in warm.env().items() if key != "IRONHIVE_DAEMON"}
        env["IRONHIVE_DAEMON"] = ""  # unset: the configuration decides
        assert warm.run("set", "daemon.enabled", "false", env=env).returncode == 0
        server.enqueue_text("Direct.")
        completed = warm.run("-p", "hi", "-o", "json", env={**env, **openai_env(server)})
        deadline = time.monotonic() + 10
        while _alive(first["pid"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        status = warm.run("daemon", "status", env=env)
    assert json.loads(completed.stdout)["content"] == "Direct."
    assert not _alive(first["pid"])
    assert status.returncode == 1 and "not used (daemon.enabled: false)" in status.stdout


PRELOAD_PROBE = r"""
import json, os, sys

opened = []


def audit(event, args):
    if event == "open" and args and isinstance(args[0], str):
        opened.append(os.path.abspath(args[0]))


sys.addaudithook(audit)
from ironhive.daemon.server import Server, preload, thread_count

preload()
server = Server(sys.argv[1], 60.0)
server.listen(os.open(os.path.join(sys.argv[1], "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
descriptors = []
for fd in os.listdir("/proc/self/fd"):
    try:
        descriptors.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass  # the listing's own descriptor, closed by now
from openai.types import CompletionUsage, Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage
from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall

parsed = (ChatCompletion, ChatCompletionChunk, ChatCompletionMessage, ChoiceDelta, ChoiceDeltaToolCall)
parsed += (CompletionUsage, Model)
print(json.dumps({
    "threads": thread_count(),
    "descriptors": descriptors,
    "listener": f"socket:[{os.fstat(server.listener.fileno()).st_ino}]",
    "opened": opened,
    "incomplete": [model.__name__ for model in parsed if not model.__pydantic_complete__],
}))
"""


def test_the_preloaded_process_holds_no_thread_no_socket_but_its_listener_and_read_no_config(tmp_path: Path) -> None:
    home, work, directory = tmp_path / "home", tmp_path / "work", tmp_path / "run"
    for folder in (home / ".ironhive", work / ".ironhive"):
        folder.mkdir(parents=True)
        (folder / "config.yaml").write_text("openai:\n  model: gpt-test\n")
    (work / ".env").write_text("OPENAI_API_KEY=sk-never-read\n")
    directory.mkdir(mode=0o700)
    completed = subprocess.run(
        [sys.executable, "-c", PRELOAD_PROBE, str(directory)],
        cwd=work,
        env=clean_environment(home),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    state = json.loads(completed.stdout)
    assert state["threads"] == 1
    sockets = [target for target in state["descriptors"] if target.startswith("socket:")]
    assert sockets == [state["listener"]]
    assert [target for target in state["descriptors"] if "eventpoll" in target] == ["anon_inode:[eventpoll]"]  # ours
    assert not [path for path in state["opened"] if path.startswith((str(home), str(work)))]
    assert state["incomplete"] == []  # the SDK's response models are built before any fork


def test_each_run_goes_to_the_process_forked_ahead_and_the_next_one_is_forked_after_it(warm: Warm) -> None:
    with LoopbackOpenAIServer() as server:
        before = warm.start(server)
        for answer in ("First.", "Second."):
            spare = warm.next_spare()
            assert _alive(spare)
            server.enqueue_text(answer)
            completed = warm.warm_run_env(server, "-p", "hi", "-o", "json")
            assert completed.returncode == 0, completed.stderr
            assert json.loads(completed.stdout)["content"] == answer
            assert warm.next_spare(other_than=spare) != spare  # a new one waits for the next run ...
            assert not _alive(spare)  # ... and the old one ran this run and ended (an unused one would be waiting)
        assert warm.status() == {"pid": before["pid"], "served": before["served"] + 2}


def test_a_spare_that_dies_unused_means_a_fork_per_run_and_stop_leaves_no_spare(warm: Warm) -> None:
    with LoopbackOpenAIServer() as server:
        warm.start(server)
        spare = warm.next_spare()
        os.kill(spare, signal.SIGKILL)
        server.enqueue_text("Forked now.")
        completed = warm.warm_run_env(server, "-p", "hi", "-o", "json")
        assert completed.returncode == 0, completed.stderr
        assert json.loads(completed.stdout)["content"] == "Forked now."
        assert warm.server_status()["spare"] is None
    with LoopbackOpenAIServer() as server:
        warm.stop()
        warm.start(server)
        spare = warm.next_spare()
        warm.run("daemon", "stop")
        deadline = time.monotonic() + 10
        while _alive(spare) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(spare)
