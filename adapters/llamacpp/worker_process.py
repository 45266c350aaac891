"""The parent's handle on the llama.cpp worker process: start it, exchange frames, keep its stderr's tail, end it."""

from __future__ import annotations

import contextlib
import itertools
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from ironhive.adapters.llamacpp.frames import FrameError, read_frame, write_frame

WORKER_MODULE: Final = "ironhive.adapters.llamacpp.worker"
# -P: the current folder (an untrusted repository, perhaps) is not put on the worker's import path.
DEFAULT_COMMAND: Final = (sys.executable, "-P", "-m", WORKER_MODULE)
STDERR_TAIL_LINES: Final = 40
CLOSE_SECONDS: Final = 15.0
"""How long closing waits for the worker to finish (it may be writing the prefix cache) before killing it."""


class WorkerHandle(Protocol):
    """What a client needs of a worker: a child :class:`WorkerProcess` or a resident worker's connection."""

    @property
    def pid(self) -> int:
        """The worker's process id."""
        ...

    @property
    def alive(self) -> bool:
        """Whether it still serves."""
        ...

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines it wrote to stderr."""
        ...

    def next_id(self) -> int:
        """A fresh request id."""
        ...

    def send(self, payload: Mapping[str, object]) -> bool:
        """Send one frame; ``False`` when it no longer reads."""
        ...

    def receive(self) -> dict[str, Any] | None:
        """The next frame; ``None`` once it has ended."""
        ...

    def exit_status(self, timeout: float = 5.0) -> int | None:
        """Its exit status once its output ended (negative: the signal that killed it)."""
        ...

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """End this client's use of it."""
        ...


class WorkerProcess:
    """One running worker (see :mod:`ironhive.adapters.llamacpp.worker`).

    Args:
        command: The command line (the worker module under this interpreter when omitted).
        env: The worker's environment (this process's when omitted).
    """

    def __init__(self, command: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> None:
        self._process = subprocess.Popen(
            list(command or DEFAULT_COMMAND),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
        )
        self._tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._closed = False
        # Drained all the time: a full stderr pipe would block llama.cpp's logging, and with it the worker.
        self._drain = threading.Thread(target=self._drain_stderr, name="llamacpp-stderr", daemon=True)
        self._drain.start()

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self._process.pid

    @property
    def alive(self) -> bool:
        """Whether the worker is still running."""
        return not self._closed and self._process.poll() is None

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines the worker wrote to stderr."""
        return list(self._tail)

    def next_id(self) -> int:
        """A fresh request id."""
        return next(self._ids)

    def send(self, payload: Mapping[str, object]) -> bool:
        """Send one frame; ``False`` when the worker no longer reads (it has died or is closing)."""
        stdin = self._process.stdin
        if stdin is None:
            return False
        with self._write_lock:
            try:
                write_frame(stdin, payload)
            except (OSError, ValueError):
                return False
        return True

    def receive(self) -> dict[str, Any] | None:
        """The next frame from the worker; ``None`` once its stdout has ended (it died) or is garbled."""
        stdout = self._process.stdout
        if stdout is None:
            return None
        try:
            return read_frame(stdout)
        except (FrameError, OSError, ValueError):
            return None

    def exit_status(self, timeout: float = 5.0) -> int | None:
        """Wait for the worker to exit (after its stdout ended) and return its status (negative: killed by a signal)."""
        try:
            status = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._drain.join(timeout=2.0)  # the rest of its stderr, for the tail
        return status

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Ask the worker to exit (it finishes its current work), kill it after ``timeout``, release the pipes."""
        if self._closed:
            return
        self._closed = True
        self.send({"op": "close"})
        if self._process.stdin is not None:
            with self._write_lock, contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._drain.join(timeout=2.0)
        for stream in (self._process.stdout, self._process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _drain_stderr(self) -> None:
        stderr = self._process.stderr
        if stderr is None:
            return
        with contextlib.suppress(OSError, ValueError):
            for raw in stderr:
                line = raw.decode("utf-8", errors="replace").rstrip()
                if line:
                    self._tail.append(line)


def signal_name(status: int) -> str | None:
    """The name of the signal a negative exit status stands for (``SIGSEGV``), ``None`` for a normal exit."""
    if status >= 0:
        return None
    try:
        return signal.Signals(-status).name
    except ValueError:
        return f"signal {-status}"


def signal_description(name: str) -> str:
    """A few words on what a fatal signal means."""
    return {
        "SIGSEGV": "segmentation fault",
        "SIGILL": "illegal instruction",
        "SIGBUS": "bus error",
        "SIGFPE": "arithmetic fault",
        "SIGABRT": "aborted",
        "SIGKILL": "killed, perhaps for lack of memory",
    }.get(name, "fatal signal")
