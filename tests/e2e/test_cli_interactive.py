"""Interactive mode through a real pseudo-terminal: a prompt, a streamed answer, Ctrl+C cancel, exit with statistics."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

from tests.support.cli import clean_environment, ironhive_executable


class Terminal:
    """The real ``ironhive`` on a pseudo-terminal."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self._controller, terminal = pty.openpty()
        self.process = subprocess.Popen(
            [ironhive_executable(), *args],
            cwd=tmp_path,
            env=clean_environment(tmp_path, {"TERM": "xterm", "COLUMNS": "100"}),
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            close_fds=True,
            start_new_session=True,
        )
        os.close(terminal)
        self.seen = b""
        self._read_to = 0  # where the last marker found ended: output after it is not consumed yet

    def read_until(self, marker: bytes, timeout: float = 30.0) -> bytes:
        """The output from the end of the last marker found up to and including ``marker``."""
        start = self._read_to
        deadline = time.monotonic() + timeout
        while (found := self.seen.find(marker, start)) < 0:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"timed out waiting for {marker!r}; saw {self.seen[-800:]!r}"
            if select.select([self._controller], [], [], remaining)[0]:
                try:
                    chunk = os.read(self._controller, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                self.seen += chunk
        if found < 0:
            return self.seen[start:]
        self._read_to = found + len(marker)
        return self.seen[start : self._read_to]

    def send(self, text: bytes) -> None:
        os.write(self._controller, text)

    def interrupt(self) -> None:
        os.killpg(self.process.pid, signal.SIGINT)

    def close(self) -> int:
        try:
            return self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            os.close(self._controller)


def write_script(tmp_path: Path) -> Path:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "steps": [
                    {"text": "Hello **there**, friend.", "usage": {"input_tokens": 100, "output_tokens": 20}},
                    {"text": " ".join(f"word{i}" for i in range(200)), "delay_seconds": 0.05},
                    {"text": "Still here.", "usage": {"input_tokens": 50, "output_tokens": 5}},
                ]
            }
        )
    )
    return script


def test_prompt_answer_cancel_and_exit_with_statistics(tmp_path: Path) -> None:
    term = Terminal(tmp_path, "--provider", "scripted", "-m", str(write_script(tmp_path)))
    try:
        term.read_until(b"> ")
        term.send(b"hi\r")
        answer = term.read_until(b"> ")
        assert b"Hello" in answer and b"friend." in answer
        term.send(b"tell me a long story\r")
        term.read_until(b"word3")
        term.interrupt()
        term.read_until(b"Interrupting")
        term.read_until(b"> ")
        term.send(b"/help\r")
        assert b"/sessions" in term.read_until(b"> ")
        term.send(b"again\r")
        assert b"Still here." in term.read_until(b"> ")
        term.send(b"exit\r")
        statistics = term.read_until(b"Est. Cost")
        assert b"Requests" in statistics and b"150" in statistics
    finally:
        code = term.close()
    assert code == 0


def test_ctrl_c_twice_exits_with_130(tmp_path: Path) -> None:
    term = Terminal(tmp_path, "--provider", "scripted", "-m", str(write_script(tmp_path)))
    try:
        term.read_until(b"> ")
        term.interrupt()
        term.read_until(b"again")
        term.interrupt()
        term.read_until(b"Session statistics")
    finally:
        code = term.close()
    assert code == 130
