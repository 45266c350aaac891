"""``ironhive serve --redis`` and ``ironhive worker`` end to end: real redis-server, two fronts, two workers, one of
them SIGKILLed mid-run — every turn still ends exactly once and the history holds every turn once, in order."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
import redis

from ironhive.adapters.sessions.redis_connection import open_redis
from ironhive.adapters.sessions.redis_store import RedisSessionStore
from ironhive.ports.chat import Role
from tests.support.cli import clean_environment, ironhive_executable, run_ironhive
from tests.support.redis_server import RedisServer, redis_server
from tests.support.serve_process import ServeProcess

SESSIONS = 50
TURNS = 5
VISIBILITY_SECONDS = 2
STARTED = re.compile(r"Worker (?P<consumer>\S+) taking turns")
# every turn streams four pieces 50 ms apart, so a SIGKILL finds turns running
SCRIPT = {"steps": [{"deltas": ["one ", "two ", "three ", "four"], "delay_seconds": 0.05}], "repeat_last": True}


class WorkerProcess:
    """``ironhive worker`` in a subprocess; waits for its start line and knows its consumer name."""

    def __init__(self, *args: str, cwd: Path, home: Path) -> None:
        self.command = [ironhive_executable(), "worker", *args]
        self.cwd, self.env = cwd, clean_environment(home)
        self.stderr_lines: list[str] = []
        self.consumer = ""
        self._started = threading.Event()
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def __enter__(self) -> WorkerProcess:
        self._process = subprocess.Popen(
            self.command, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 60
        while not self._started.wait(0.1):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self._process.kill()
                raise AssertionError(f"ironhive worker did not start: {''.join(self.stderr_lines)}")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        code = self.stop()
        if kind is None and code != -signal.SIGKILL:
            assert code == 0, "".join(self.stderr_lines)
            assert "Traceback" not in "".join(self.stderr_lines), "".join(self.stderr_lines)

    def _read(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for line in self._process.stderr:
            self.stderr_lines.append(line)
            if (match := STARTED.search(line)) is not None:
                self.consumer = match["consumer"]
                self._started.set()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self._process is not None
        if self._process.poll() is None:
            self._process.send_signal(sig)
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._reader is not None:
            self._reader.join(timeout=30)
        if self._process.stderr is not None:
            self._process.stderr.close()
        return self._process.returncode


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with redis_server() as running:
        yield running


def started_turns_held_by(client: redis.Redis, consumer: str) -> int:
    """How many turns ``consumer`` holds that an attempt has started (what a SIGKILL interrupts)."""
    turns_key = next(iter(client.scan_iter(match="ironhive:*:turns")), None)
    if turns_key is None:
        return 0
    held: Any = client.xpending_range(turns_key, "workers", "-", "+", 100, consumername=consumer)
    prefix = turns_key.decode()[: -len("turns")]
    count = 0
    for entry in held:
        entries: Any = client.xrange(turns_key, entry["message_id"], entry["message_id"])
        for _id, fields in entries:
            count += bool(client.exists(f"{prefix}turn-started:{fields[b'turn_id'].decode()}"))
    return count


def turn_ends(client: redis.Redis) -> int:
    """The ``turn_end`` events in every session's stream, read straight from Redis."""
    count = 0
    for key in client.scan_iter(match="ironhive:*:events:*"):
        entries: Any = client.xrange(key)
        count += sum(json.loads(fields[b"e"])["type"] == "turn_end" for _id, fields in entries)
    return count


def stored_user_messages(url: str, project: Path, session_id: str) -> list[str]:
    async def load() -> list[str]:
        client = await open_redis(url)
        try:
            store = RedisSessionStore.for_project(client, project)
            return [m.text for m in await store.load_messages(session_id) if m.role is Role.USER]
        finally:
            await client.aclose()

    return asyncio.run(load())


def test_fifty_sessions_over_two_fronts_and_two_workers_survive_a_killed_worker(
    work: Path, server: RedisServer
) -> None:
    server.flush()
    home = work.parent / "home"
    (home / ".ironhive").mkdir(parents=True, exist_ok=True)
    (home / ".ironhive" / "config.yaml").write_text(f"server:\n  visibilityTimeoutSeconds: {VISIBILITY_SECONDS}\n")
    script = work.parent / "script.json"
    script.write_text(json.dumps(SCRIPT))
    model = ("--provider", "scripted", "-m", str(script))
    inspect = redis.Redis.from_url(server.url)
    with (
        WorkerProcess("--redis", server.url, "--concurrency", "4", *model, cwd=work, home=home) as doomed,
        WorkerProcess("--redis", server.url, "--concurrency", "4", *model, cwd=work, home=home) as survivor,
        ServeProcess("--redis", server.url, *model, cwd=work, home=home) as front_a,
        ServeProcess("--redis", server.url, *model, cwd=work, home=home) as front_b,
    ):
        fronts = (front_a, front_b)
        sessions = [fronts[n % 2].new_session() for n in range(SESSIONS)]
        turn_ids: dict[str, list[str]] = {session: [] for session in sessions}
        for turn in range(TURNS):
            for n, session in enumerate(sessions):
                turn_ids[session].append(fronts[(n + turn) % 2].send(session, f"{session} turn {turn}"))
        deadline = time.monotonic() + 60
        while started_turns_held_by(inspect, doomed.consumer) < 2:
            assert time.monotonic() < deadline, "the first worker never ran two turns at once"
            time.sleep(0.01)
        assert 0 < turn_ends(inspect) < SESSIONS * TURNS  # midway
        doomed.stop(signal.SIGKILL)

        restarted: list[str] = []
        for n, session in enumerate(sessions):
            with fronts[n % 2 - 1].events(session) as stream:
                stream.set_timeout(60)
                frames = [frame for _ in range(TURNS) for frame in stream.turn()]
            restarted += [f.data["turn_id"] for f in frames if f.event == "turn_restarted"]
            assert [f.event for f in frames].count("turn_end") == TURNS
        assert turn_ends(inspect) == SESSIONS * TURNS  # and not one more
        assert restarted, "no turn of the killed worker was restarted"
        assert set(restarted) <= {turn for ids in turn_ids.values() for turn in ids}
        listed = front_a.request("GET", f"/v1/sessions/{sessions[0]}").body
        assert listed["message_count"] == 2 * TURNS
    assert "Traceback" not in "".join(survivor.stderr_lines)
    for session in sessions:
        assert stored_user_messages(server.url, work.resolve(), session) == [
            f"{session} turn {turn}" for turn in range(TURNS)
        ]
    inspect.close()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ((), 2, "needs a Redis URL: --redis URL or server.redis"),
        (("--redis", " "), 2, "--redis must not be empty"),
        (("--redis", "redis://127.0.0.1:1/0", "--concurrency", "0"), 2, "--concurrency must be at least 1"),
        (("--redis", "redis://:hunter2@127.0.0.1:1/0"), 1, "Cannot connect to Redis"),
        (("--redis", "not a url"), 1, "Redis"),
    ],
)
def test_a_worker_that_cannot_work_says_why(work: Path, args: tuple[str, ...], code: int, message: str) -> None:
    done = run_ironhive("worker", *args, "--provider", "scripted", cwd=work, home=work.parent / "home", timeout=60)
    assert done.returncode == code, done.stderr
    assert message in done.stderr
    assert "hunter2" not in done.stderr
    assert "Traceback" not in done.stderr


def test_only_the_users_file_points_the_worker_at_redis(work: Path) -> None:
    (work / ".ironhive").mkdir()
    (work / ".ironhive" / "config.yaml").write_text("server:\n  redis: redis://127.0.0.1:1/0\n")
    done = run_ironhive("worker", "--provider", "scripted", cwd=work, home=work.parent / "home", timeout=60)
    assert done.returncode == 2, done.stderr
    assert "needs a Redis URL" in done.stderr
    user = work.parent / "home" / ".ironhive"
    user.mkdir(parents=True, exist_ok=True)
    (user / "config.yaml").write_text("server:\n  redis: redis://127.0.0.1:1/0\n")
    honoured = run_ironhive("worker", "--provider", "scripted", cwd=work, home=work.parent / "home", timeout=60)
    assert honoured.returncode == 1, honoured.stderr  # the user's own file is read: it tries that Redis
    assert "Cannot connect to Redis at redis://127.0.0.1:1/0" in honoured.stderr


def test_an_approval_and_a_cancel_reach_the_worker_through_either_front(work: Path, server: RedisServer) -> None:
    server.flush()
    home = work.parent / "home"
    approve = work.parent / "approve.json"
    call = {"tool_calls": [{"name": "execute_command", "arguments": {"command": "echo via-redis"}, "id": "call_1"}]}
    approve.write_text(json.dumps({"steps": [call, {"text": "Done."}]}))
    slow = work.parent / "slow.json"
    slow.write_text(json.dumps({"steps": [{"deltas": [f"piece {n} " for n in range(40)], "delay_seconds": 0.25}]}))
    with (
        WorkerProcess("--redis", server.url, "--provider", "scripted", "-m", str(approve), cwd=work, home=home),
        WorkerProcess("--redis", server.url, "--provider", "scripted", "-m", str(slow), cwd=work.parent, home=home),
        ServeProcess("--redis", server.url, "--provider", "scripted", cwd=work, home=home) as front_a,
        ServeProcess("--redis", server.url, "--provider", "scripted", cwd=work, home=home) as front_b,
    ):
        session = front_a.new_session()
        front_b.send(session, "run it")
        with front_a.events(session) as stream:
            request = stream.until("hitl_request")[-1].data
            answer = front_b.request(
                "POST", f"/v1/sessions/{session}/approvals", {"approved": True, "id": request["id"]}
            )
            assert answer.status == 200, answer
            rest = [frame.data for frame in stream.turn()]
        assert [e["output"] for e in rest if e["type"] == "tool_end"] == ["Exit code: 0\nOutput:\nvia-redis"]
        assert "".join(e["content"] for e in rest if e["type"] == "text_delta") == "Done."
        late = front_a.request("POST", f"/v1/sessions/{session}/approvals", {"approved": True, "id": request["id"]})
        assert late.status == 409

        # the other worker serves the parent directory: its project (and turns) are another project's
        other = ServeProcess("--redis", server.url, "--provider", "scripted", cwd=work.parent, home=home)
        with other:
            long_session = other.new_session()
            turn_id = other.send(long_session, "go")
            with other.events(long_session) as stream:
                stream.until("text_delta")
                cancel = other.request("POST", f"/v1/sessions/{long_session}/cancel", {"turn_id": turn_id})
                assert cancel.status == 200, cancel
                frames = stream.turn()
            assert len([f for f in frames if f.event == "text_delta"]) < 39
            assert [f.event for f in frames].count("turn_end") == 1
