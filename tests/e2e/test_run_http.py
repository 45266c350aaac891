"""The real ``ironhive run --http`` against the README's sample agent host on loopback: ready, turns, approvals."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.cli import clean_environment, ironhive_executable, run_ironhive
from tests.support.loopback_server import start_site
from tests.support.server_process import script

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "http-agent-host" / "host.py"
SID = "http-session-1"
TIMEOUT = 30.0
TOKEN = "s3cret-host-token"
WRITE_NOTES = {"name": "write_file", "arguments": {"path": "notes.md", "content": "# Notes\n"}, "id": "call_w1"}
Json = dict[str, Any]


def load_sample() -> ModuleType:
    """The sample host module, loaded from its file (the README's example is the test's host)."""
    spec = importlib.util.spec_from_file_location("http_agent_host_sample", SAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.asynccontextmanager
async def sample_host(token: str | None = None) -> AsyncIterator[tuple[Any, str]]:
    """The sample's ``AgentHost`` served on a free loopback port; yields it and its base URL."""
    host = load_sample().AgentHost(token)
    runner, port = await start_site(host.app(), shutdown_timeout=1.0)
    try:
        yield host, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def agent(
    url: str, work: Path, steps: list[Json], env: Mapping[str, str] | None = None
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``ironhive run --http URL`` on the scripted model; killed on the way out if it is still running."""
    process = await asyncio.create_subprocess_exec(
        ironhive_executable(),
        "run",
        "--http",
        url,
        "--session-id",
        SID,
        "--provider",
        "scripted",
        "-m",
        script(work, steps),
        cwd=work,
        env=clean_environment(work.parent / "home", env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.communicate()


async def events_until(host: Any, event_type: str) -> list[Json]:
    """The host's events up to and including the first of ``event_type``."""
    events: list[Json] = []
    while not events or events[-1]["type"] != event_type:
        events.append(await asyncio.wait_for(host.events.get(), TIMEOUT))
    return events


async def finished(process: asyncio.subprocess.Process) -> tuple[int, str, str]:
    stdout, stderr = await asyncio.wait_for(process.communicate(), TIMEOUT)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


async def test_ready_a_turn_with_an_approval_and_shutdown(work: Path) -> None:
    async with (
        sample_host() as (host, url),
        agent(url, work, [{"tool_calls": [WRITE_NOTES]}, {"text": "Done."}]) as run,
    ):
        assert await asyncio.wait_for(host.ready.get(), TIMEOUT) == SID
        await host.send(SID, {"type": "user_message", "content": "write the notes"})
        before = await events_until(host, "hitl_request")
        request = before[-1]
        assert before[-2] == {
            "type": "tool_start",
            "tool": "write_file",
            "input": {"path": "notes.md", "content": "# Notes\n"},
            "call_id": "call_w1",
        }
        assert (request["tool_name"], request["call_id"], request["arguments"]) == (
            "write_file",
            "call_w1",
            {"path": "notes.md", "content": "# Notes\n"},
        )
        assert request["action"] == "Write file: notes.md"
        assert not (work / "notes.md").exists()  # the call waits for the host's answer
        await host.send(SID, {"type": "hitl_response", "id": request["id"], "approved": True})
        after = await events_until(host, "turn_end")
        await host.send(SID, {"type": "shutdown"})
        code, stdout, stderr = await finished(run)
    assert after[0] == {
        "type": "tool_end",
        "tool": "write_file",
        "success": True,
        "output": "Successfully wrote to file: notes.md",
        "call_id": "call_w1",
    }
    assert "".join(event["content"] for event in after if event["type"] == "text_delta") == "Done."
    assert [event["type"] for event in after].count("turn_end") == 1
    assert (work / "notes.md").read_text() == "# Notes\n"
    assert (code, stdout, stderr) == (0, "", "")


async def test_a_rejected_call_does_not_run_and_the_session_is_resumed_by_id(work: Path) -> None:
    steps = [{"tool_calls": [WRITE_NOTES]}, {"text": "Not written."}, {"text": "Still here."}]
    async with sample_host() as (host, url), agent(url, work, steps) as run:
        await asyncio.wait_for(host.ready.get(), TIMEOUT)
        await host.send(SID, {"type": "user_message", "content": "write the notes"})
        request = (await events_until(host, "hitl_request"))[-1]
        await host.send(SID, {"type": "hitl_response", "id": request["id"], "approved": False, "reason": "no"})
        turn = await events_until(host, "turn_end")
        await host.send(SID, {"type": "shutdown"})
        assert (await finished(run))[0] == 0
    assert turn[0]["success"] is False and turn[0]["output"] == "Approval rejected: no"
    assert not (work / "notes.md").exists()
    listed = run_ironhive("sessions", "list", cwd=work, home=work.parent / "home")
    assert SID in listed.stdout


@pytest.mark.parametrize(("sent", "expected_code"), [(TOKEN, 0), ("wrong-token", 1), (None, 1)])
async def test_the_host_token_is_sent_as_a_bearer_token_and_never_printed(
    work: Path, sent: str | None, expected_code: int
) -> None:
    env = {"IRONHIVE_HOST_TOKEN": sent} if sent is not None else {}
    async with sample_host(TOKEN) as (host, url), agent(url, work, [{"text": "hi"}], env) as run:
        if expected_code == 0:
            assert await asyncio.wait_for(host.ready.get(), TIMEOUT) == SID
            await host.send(SID, {"type": "shutdown"})
        code, stdout, stderr = await finished(run)
    assert code == expected_code
    assert TOKEN not in stdout + stderr and "wrong-token" not in stdout + stderr
    if expected_code == 1:
        assert stderr == f"Error: The host answered HTTP 401 to ready for session {SID}\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_host_is_a_clear_error_at_once(work: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    completed = run_ironhive(
        "run", "--http", url, "--provider", "scripted", "-m", script(work, [{"text": "hi"}]), cwd=work,
        home=work.parent / "home", timeout=TIMEOUT,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert completed.returncode == 1
    assert completed.stderr.startswith(f"Error: Cannot reach the host at {url}/api/agent/")
    assert completed.stderr.count("\n") == 1 and completed.stdout == ""
    assert elapsed < 20  # no reconnect attempts before ready: a refused connection fails at once


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--server", "--http", "http://127.0.0.1:5100"], "Error: --server and --http cannot be used together"),
        (["--http", "ftp://127.0.0.1"], "Error: --http needs an http:// or https:// URL"),
        (["--http", "http://user:pw@127.0.0.1:5100"], "Error: --http URLs must not carry credentials"),
    ],
)
def test_contradictory_or_malformed_options_are_usage_errors(work: Path, args: list[str], message: str) -> None:
    completed = run_ironhive("run", *args, cwd=work, home=work.parent / "home", timeout=TIMEOUT)
    assert completed.returncode == 2
    assert completed.stderr.startswith(message)
    assert "pw" not in completed.stderr


@pytest.fixture
def console_host(work: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The sample run as its README says (``python host.py --port N``), its console answered from a pipe."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SAMPLE), "--port", str(port)],
        cwd=work.parent,
        env=clean_environment(work.parent / "home", {"PYTHONUNBUFFERED": "1"}),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("Waiting for: ironhive run --http")
        yield process, f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_the_sample_console_host_chats_with_the_agent(
    work: Path, console_host: tuple[subprocess.Popen[str], str]
) -> None:
    host, url = console_host
    steps = [{"tool_calls": [WRITE_NOTES]}, {"text": "Done."}]
    agent_process = subprocess.Popen(
        [ironhive_executable(), "run", "--http", url, "--provider", "scripted", "-m", script(work, steps)],
        cwd=work,
        env=clean_environment(work.parent / "home"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # a prompt, "y" to the approval, then an empty line: the host shuts the agent down and exits
        assert host.stdin is not None
        host.stdin.write("write the notes\ny\n\n")
        host.stdin.close()
        agent_out, agent_err = agent_process.communicate(timeout=TIMEOUT)  # first: an agent that fails shows why
        host.wait(timeout=TIMEOUT)
        assert host.stdout is not None and host.stderr is not None
        host_out, host_err = host.stdout.read(), host.stderr.read()
    finally:
        if agent_process.poll() is None:
            agent_process.kill()
            agent_process.communicate()
    assert (host.returncode, host_err) == (0, "")
    assert "is ready." in host_out and "Allow Write file: notes.md? [y/N]" in host_out
    assert "[tool_end] Successfully wrote to file: notes.md" in host_out and "Done." in host_out
    assert (agent_process.returncode, agent_out, agent_err) == (0, "", "")
    assert (work / "notes.md").read_text() == "# Notes\n"
