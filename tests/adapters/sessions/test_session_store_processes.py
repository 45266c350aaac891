"""The session store across processes: SIGKILL loses at most the turn in flight; parallel writers lose nothing."""

from __future__ import annotations

import asyncio
import itertools
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ironhive.adapters.sessions.store import DiskCacheSessionStore
from tests.adapters.sessions.conversation import text_turn
from tests.adapters.sessions.session_writer import turn_messages

WRITER = Path(__file__).with_name("session_writer.py")


class Writer:
    """A ``session_writer.py`` process whose stdout lines are read by a thread, so waits can time out."""

    def __init__(self, base: Path, project: Path, turns: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WRITER), str(base), str(project), str(turns)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.session_id = self.expect("session ").removeprefix("session ")
        self.expect("ready")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, prefix: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert line is not None, f"writer ended early: {self.finish()}"
            if line.startswith(prefix):
                return line

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def finish(self) -> str:
        """Wait for the process, close its pipes, and return its stderr."""
        _, stderr = self.process.communicate(timeout=60)
        self._reader.join(timeout=10)
        return stderr


def integrity(directory: Path) -> str:
    connection = sqlite3.connect(directory / "cache.db")
    try:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        connection.close()


def writes_interleaved(directory: Path) -> bool:
    """Whether the turn rows, in insertion order, switch between sessions more than once."""
    connection = sqlite3.connect(directory / "cache.db")
    try:
        keys = [row[0] for row in connection.execute("SELECT key FROM Cache WHERE key LIKE 'turn/%' ORDER BY rowid")]
    finally:
        connection.close()
    owners = [key.split("/")[1] for key in keys]
    return sum(1 for before, after in itertools.pairwise(owners) if before != after) > 1


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_sigkill_at_a_random_moment_loses_at_most_the_turn_in_flight(tmp_path: Path, seed: int) -> None:
    chance = random.Random(seed)
    base, project = tmp_path / "base", tmp_path / "project"
    writer = Writer(base, project, turns=0)
    writer.go()
    acknowledged = -1
    for _ in range(chance.randint(1, 12)):
        acknowledged = int(writer.expect("wrote ").split()[1])
    await asyncio.sleep(chance.uniform(0, 0.03))
    writer.process.send_signal(signal.SIGKILL)
    writer.finish()
    assert writer.process.returncode == -signal.SIGKILL

    store = DiskCacheSessionStore(base, project)
    assert integrity(store.directory) == "ok"
    messages = await store.load_messages(writer.session_id)
    stored_turns, remainder = divmod(len(messages), 4)
    assert remainder == 0  # never half a turn
    assert stored_turns >= acknowledged + 1  # every acknowledged turn is there
    for number in range(stored_turns):
        assert messages[number * 4 : number * 4 + 4] == turn_messages(writer.session_id, number)
    info = await store.get(writer.session_id)
    assert info.message_count == 2 * stored_turns
    await store.append_turn(writer.session_id, text_turn("after the crash", "still writable"))
    assert len(await store.load_messages(writer.session_id)) == len(messages) + 2


async def test_two_processes_writing_different_sessions_lose_nothing(tmp_path: Path) -> None:
    base, project, turns = tmp_path / "base", tmp_path / "project", 40
    writers = [Writer(base, project, turns) for _ in range(2)]
    for writer in writers:  # both wait on stdin, so their writes overlap
        writer.go()
    for writer in writers:
        writer.expect("done")
        stderr = writer.finish()
        assert writer.process.returncode == 0, stderr

    store = DiskCacheSessionStore(base, project)
    assert integrity(store.directory) == "ok"
    assert writes_interleaved(store.directory)  # the writers really ran at the same time
    listed = await store.list(10)
    assert sorted(info.id for info in listed) == sorted(writer.session_id for writer in writers)
    for writer in writers:
        messages = await store.load_messages(writer.session_id)
        expected = tuple(message for number in range(turns) for message in turn_messages(writer.session_id, number))
        assert messages == expected
        assert (await store.get(writer.session_id)).message_count == 2 * turns
