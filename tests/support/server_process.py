"""ServerProcess: the real ``ironhive run --server`` in a subprocess, spoken to over its stdin/stdout pipes."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

from ironhive.protocol.models import DEFAULT_PROTOCOL, UnreadableLineError
from tests.support.cli import clean_environment, ironhive_executable

Event: TypeAlias = dict[str, Any]

DEFAULT_TIMEOUT = 15.0
"""Seconds a read waits for the next event before the test fails (generous: CI machines are slow)."""


class _Closed:
    """Marks the end of the server's stdout."""


class _NotJson:
    """A stdout line that is not JSON (never allowed: only protocol lines may go to stdout)."""

    def __init__(self, line: bytes) -> None:
        self.line = line


_CLOSED = _Closed()
_CRASH_MARKERS = ("Traceback", "Task was destroyed", "Exception ignored", "never awaited", "Task exception was")


class ServerProcess:
    """Starts ``ironhive run --server *args`` with pipes, writes request lines and reads event lines with timeouts.

    Use it as a context manager: leaving it closes stdin, waits for the process (killing it when it does not end),
    joins the reader threads and closes every pipe. When the block ends without an exception it also checks that
    every stdout line was a protocol event.

    Args:
        args: Extra arguments after ``run --server`` (``--provider``, ``-m``, ``--session-id``, ...).
        cwd: The working directory of the server.
        home: ``HOME`` of the server (keeps the user's configuration out).
        env: Extra environment variables (e.g. ``OPENAI_API_KEY``/``OPENAI_MODEL``/``OPENAI_ENDPOINT``).
    """

    def __init__(self, *args: str, cwd: Path, home: Path, env: Mapping[str, str] | None = None) -> None:
        self._command = [ironhive_executable(), "run", "--server", *args]
        self._cwd = cwd
        self._env = clean_environment(home, env)
        self._events: queue.Queue[Event | _NotJson | _Closed] = queue.Queue()
        self._lines: list[bytes] = []
        self._stderr: list[bytes] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._stdout_closed = False

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def __enter__(self) -> ServerProcess:
        self._process = subprocess.Popen(
            self._command,
            cwd=self._cwd,
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self._process.stdout is not None and self._process.stderr is not None
        for target, stream, name in (
            (self._pump_stdout, self._process.stdout, "server-stdout"),
            (self._pump_stderr, self._process.stderr, "server-stderr"),
        ):
            thread = threading.Thread(target=target, args=(stream,), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        if exc_type is None:
            self.assert_protocol_only()
            self.assert_clean_stderr()

    def stop(self, timeout: float = 10.0) -> int:
        """End the process (EOF first, then kill), join the readers and close the pipes; returns the exit code."""
        process = self.process
        self.close_stdin()
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait(timeout=timeout)
        for thread in self._threads:
            thread.join(timeout=timeout)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        return code

    @property
    def process(self) -> subprocess.Popen[bytes]:
        """The running process (only inside the ``with`` block)."""
        if self._process is None:
            raise RuntimeError("the server is not started: use ServerProcess as a context manager")
        return self._process

    # -- writing ---------------------------------------------------------------------------------------------------

    def send(self, request: Mapping[str, Any]) -> None:
        """Write one request as a compact JSON line."""
        self.send_raw((json.dumps(request, separators=(",", ":")) + "\n").encode("utf-8"))

    def send_raw(self, data: bytes) -> None:
        """Write bytes exactly as given (the caller supplies the newlines) and flush."""
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()

    def user_message(self, content: str, **fields: Any) -> None:
        """Write a ``user_message`` (extra fields such as ``options`` are added as given)."""
        self.send({"type": "user_message", "content": content, **fields})

    def close_stdin(self) -> None:
        """Close the server's stdin (end of input)."""
        stdin = self.process.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                stdin.close()

    def wait(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait for the process to exit; returns its exit code."""
        return self.process.wait(timeout=timeout)

    # -- reading ---------------------------------------------------------------------------------------------------

    def next_event(self, timeout: float = DEFAULT_TIMEOUT) -> Event:
        """The next event; fails the test on a timeout, a non-JSON line or the end of stdout."""
        try:
            item = self._events.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no event within {timeout}s; stderr:\n{self.stderr_text}") from None
        if isinstance(item, _Closed):
            self._events.put(item)  # keep reporting the end to later reads
            raise AssertionError(f"the server closed its stdout; stderr:\n{self.stderr_text}")
        if isinstance(item, _NotJson):
            raise AssertionError(f"a line on stdout is not JSON: {item.line[:200]!r}")
        return item

    def events_until(self, event_type: str, timeout: float = DEFAULT_TIMEOUT) -> list[Event]:
        """Events up to and including the next one of ``event_type`` (the timeout is for the whole wait)."""
        deadline = time.monotonic() + timeout
        events: list[Event] = []
        while True:
            event = self.next_event(max(0.0, deadline - time.monotonic()))
            events.append(event)
            if event["type"] == event_type:
                return events

    def read_turn(self, timeout: float = DEFAULT_TIMEOUT) -> list[Event]:
        """The events of one turn, up to and including its ``turn_end``."""
        return self.events_until("turn_end", timeout)

    def events_within(self, seconds: float) -> list[Event]:
        """Whatever events arrive within ``seconds`` (use it to show that nothing arrives)."""
        deadline = time.monotonic() + seconds
        events: list[Event] = []
        while (left := deadline - time.monotonic()) > 0:
            try:
                item = self._events.get(timeout=left)
            except queue.Empty:
                break
            if isinstance(item, _Closed):
                self._events.put(item)
                break
            if isinstance(item, _NotJson):
                raise AssertionError(f"a line on stdout is not JSON: {item.line[:200]!r}")
            events.append(item)
        return events

    def remaining_events(self, timeout: float = DEFAULT_TIMEOUT) -> list[Event]:
        """Every event until the server closes its stdout (fails the test if it does not within ``timeout``)."""
        deadline = time.monotonic() + timeout
        events: list[Event] = []
        while True:
            try:
                item = self._events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"stdout still open after {timeout}s; stderr:\n{self.stderr_text}") from None
            if isinstance(item, _Closed):
                self._events.put(item)
                return events
            if isinstance(item, _NotJson):
                raise AssertionError(f"a line on stdout is not JSON: {item.line[:200]!r}")
            events.append(item)

    @property
    def stdout_lines(self) -> list[str]:
        """Every line the server wrote to stdout so far, as text without the newline."""
        with self._lock:
            return [line.decode("utf-8", "replace").rstrip("\n") for line in self._lines]

    @property
    def stderr_text(self) -> str:
        """What the server wrote to stderr so far."""
        with self._lock:
            return b"".join(self._stderr).decode("utf-8", "replace")

    def assert_protocol_only(self) -> None:
        """Every stdout line is one protocol event, ending with a newline."""
        with self._lock:
            lines = list(self._lines)
        for line in lines:
            assert line.endswith(b"\n"), f"an unterminated line on stdout: {line[:200]!r}"
            try:
                DEFAULT_PROTOCOL.parse_event(line)
            except UnreadableLineError as error:
                raise AssertionError(f"not a protocol event ({error}): {line[:200]!r}") from None

    def assert_clean_stderr(self) -> None:
        """Nothing on stderr hints at a crash, a lost task or an un-awaited coroutine."""
        text = self.stderr_text
        for marker in _CRASH_MARKERS:
            assert marker not in text, f"stderr shows {marker!r}:\n{text}"

    def _pump_stdout(self, stream: Any) -> None:
        try:
            for line in iter(stream.readline, b""):
                with self._lock:
                    self._lines.append(line)
                try:
                    value = json.loads(line)
                except ValueError:
                    self._events.put(_NotJson(line))
                    continue
                self._events.put(value if isinstance(value, dict) else _NotJson(line))
        except (OSError, ValueError):  # the pipe was closed by stop() while reading
            pass
        finally:
            self._events.put(_CLOSED)

    def _pump_stderr(self, stream: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: stream.read1(65536), b""):
                with self._lock:
                    self._stderr.append(chunk)


def openai_environment(base_url: str, model: str = "gpt-test") -> dict[str, str]:
    """The variables that point the server at an OpenAI-compatible endpoint (e.g. the loopback server)."""
    return {"OPENAI_API_KEY": "sk-loopback-test", "OPENAI_MODEL": model, "OPENAI_ENDPOINT": base_url}


def hitl_placement_errors(events: list[Event]) -> list[str]:
    """Where a ``hitl_request`` is not between its call's ``tool_start`` and ``tool_end`` (same ``call_id``)."""
    problems: list[str] = []
    for index, event in enumerate(events):
        if event["type"] != "hitl_request":
            continue
        call_id = event.get("call_id")
        started = [i for i, e in enumerate(events[:index]) if e["type"] == "tool_start" and e["call_id"] == call_id]
        ended_before = [i for i, e in enumerate(events[:index]) if e["type"] == "tool_end" and e["call_id"] == call_id]
        ended_after = [i for i, e in enumerate(events[index:]) if e["type"] == "tool_end" and e["call_id"] == call_id]
        if not started:
            problems.append(f"hitl_request {event['id']} has no tool_start with call_id {call_id!r} before it")
        if ended_before:
            problems.append(f"hitl_request {event['id']} comes after the tool_end of call {call_id!r}")
        if not ended_after:
            problems.append(f"hitl_request {event['id']} has no tool_end with call_id {call_id!r} after it")
    return problems


def script(work: Path, steps: Sequence[object]) -> str:
    """Write the scripted model's ``steps`` beside the working directory; returns the file's path for ``-m``."""
    path = work.parent / "script.json"
    path.write_text(json.dumps({"steps": steps}))
    return str(path)
