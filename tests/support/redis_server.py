"""A real ``redis-server`` for tests: started on a private Unix socket, no persistence, stopped afterwards."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.components import REDIS

START_TIMEOUT = 10.0
"""Seconds the server gets to accept connections."""


@dataclass(frozen=True, slots=True)
class RedisServer:
    """A running ``redis-server``.

    Attributes:
        url: Its URL (``unix://…``), as ``--redis`` and redis-py take it.
        socket: The Unix socket it listens on (mode 0700: only this user).
        process: The server process.
    """

    url: str
    socket: Path
    process: subprocess.Popen[bytes]

    def flush(self) -> None:
        """Empty every database (a clean server for the next test)."""
        subprocess.run(["redis-cli", "-s", str(self.socket), "FLUSHALL"], check=True, capture_output=True)


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    """Start ``redis-server`` on a Unix socket in a fresh directory (no TCP port, no dump file); stop it on exit.

    The test is skipped (failed in CI) when redis-server is not installed.
    """
    REDIS.require()
    folder = Path(tempfile.mkdtemp(prefix="ironhive-redis-"))
    socket = folder / "redis.sock"
    command = [
        shutil.which("redis-server") or "redis-server",
        "--port", "0",
        "--unixsocket", str(socket),
        "--unixsocketperm", "700",
        "--save", "",
        "--appendonly", "no",
        "--dir", str(folder),
        "--logfile", str(folder / "redis.log"),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers(socket):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start: {(folder / 'redis.log').read_text(errors='replace')}")
            time.sleep(0.02)
        yield RedisServer(url=f"unix://{socket}", socket=socket, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
        shutil.rmtree(folder, ignore_errors=True)


def _answers(socket: Path) -> bool:
    if not socket.exists():
        return False
    done = subprocess.run(["redis-cli", "-s", str(socket), "PING"], capture_output=True, text=True, check=False)
    return done.stdout.strip() == "PONG"
