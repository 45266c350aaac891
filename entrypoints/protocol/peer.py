"""CommandPeer: a command speaking JSON Lines on its stdin/stdout, read line by line with timeouts."""

from __future__ import annotations

import contextlib
import queue
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path


class CommandPeer:
    """A command under test: lines written to its stdin, stdout lines read with a timeout, stderr collected."""

    def __init__(self, argv: list[str], cwd: Path, env: Mapping[str, str]) -> None:
        self._argv = argv
        self._cwd = cwd
        self._env = dict(env)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[bytes] = []
        self._threads: list[threading.Thread] = []
        self._process: subprocess.Popen[bytes] | None = None
        self.output_ended = False
        self.exit_code: int | None = None

    def __enter__(self) -> CommandPeer:
        self._process = subprocess.Popen(
            self._argv,
            cwd=self._cwd,
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for target in (self._pump_stdout, self._pump_stderr):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc_info: object) -> None:
        process = self._process
        assert process is not None
        self.close_input()
        try:
            self.exit_code = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            self.exit_code = None
        for thread in self._threads:
            thread.join(timeout=5)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()

    @property
    def stderr_text(self) -> str:
        """Everything the command wrote to stderr so far."""
        return b"".join(self._stderr).decode("utf-8", "replace")

    def write(self, text: str) -> None:
        """Send ``text`` to the command's stdin (ignored once the command stopped reading)."""
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write(text.encode("utf-8"))
            self._process.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def close_input(self) -> None:
        """End the command's stdin."""
        assert self._process is not None and self._process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self._process.stdin.close()

    def read(self, timeout: float) -> str | None:
        """The next stdout line without its newline, or None at the end of the output or after ``timeout``."""
        if self.output_ended:
            return None
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            self.output_ended = True
        return line

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None when the command is still running after ``timeout``."""
        assert self._process is not None
        try:
            return self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def _pump_stdout(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for raw in self._process.stdout:
            self._lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for raw in self._process.stderr:
            self._stderr.append(raw)
