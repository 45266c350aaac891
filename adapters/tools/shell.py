"""The execute_command tool: ``bash -c`` in its own process group, with a timeout that stops the whole group."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import subprocess
from collections import deque
from pathlib import Path
from typing import ClassVar

from ironhive.adapters.tools.arguments import Arguments, object_schema
from ironhive.adapters.tools.base import BuiltInTool
from ironhive.domain.errors import ToolError
from ironhive.ports.chat import JsonValue

HEAD_CHARS = 20_000
"""Characters kept from the start of each output stream."""
TAIL_CHARS = 30_000
"""Characters kept from the end of each output stream: where builds and tests print the error and the summary."""
DEFAULT_TIMEOUT_MS = 30_000

_DRAIN_SECONDS = 0.5
_POLL_SECONDS = 0.02


class HeadTailBuffer:
    """Keeps the beginning and the end of a text of unknown length, and counts what it dropped in between.

    Args:
        head: Characters kept from the start.
        tail: Characters kept from the end.
    """

    def __init__(self, head: int = HEAD_CHARS, tail: int = TAIL_CHARS) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self._head: list[str] = []
        self._head_length = 0
        self._tail: deque[str] = deque()
        self._tail_length = 0
        self._dropped = 0

    def append(self, text: str) -> None:
        """Add text at the end."""
        room = self._head_limit - self._head_length
        if room > 0:
            self._head.append(text[:room])
            self._head_length += min(room, len(text))
            text = text[room:]
        if not text:
            return
        self._tail.append(text)
        self._tail_length += len(text)
        # Whole chunks leave once the rest still fills the tail; render() trims the remainder exactly.
        while self._tail and self._tail_length - len(self._tail[0]) >= self._tail_limit:
            dropped = self._tail.popleft()
            self._tail_length -= len(dropped)
            self._dropped += len(dropped)

    def render(self) -> str:
        """The kept text, with ``[... N chars omitted ...]`` where the middle was dropped."""
        tail = "".join(self._tail)
        excess = max(0, len(tail) - self._tail_limit)
        omitted = self._dropped + excess
        head = "".join(self._head)
        if not omitted:
            return head + tail
        return f"{head}\n[... {omitted} chars omitted ...]\n{tail[excess:]}"


class _CommandProtocol(asyncio.SubprocessProtocol):
    """Collects a child's stdout and stderr, and tells when it exited and when its pipes closed."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.streams = {1: HeadTailBuffer(), 2: HeadTailBuffer()}
        self._decoders = {fd: codecs.getincrementaldecoder("utf-8")(errors="replace") for fd in (1, 2)}
        self._open = {1, 2}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.pipes_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.streams[fd].append(self._decoders[fd].decode(data))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd in self._open:
            self.streams[fd].append(self._decoders[fd].decode(b"", final=True))
            self._open.discard(fd)
        if not self._open and not self.pipes_closed.done():
            self.pipes_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def text(self, fd: int) -> str:
        return self.streams[fd].render().rstrip("\n")


class ExecuteCommandTool(BuiltInTool):
    """``execute_command``: runs a shell command in the working directory and reports its exit code and output.

    The command runs as ``bash -c`` in a new session (its own process group) with stdin from ``/dev/null``. On timeout
    or cancellation the whole group gets SIGTERM, then SIGKILL after ``kill_grace`` seconds. A non-zero exit code is a
    normal result, so the model sees it.

    Args:
        root: The working directory the command runs in.
        kill_grace: Seconds between SIGTERM and SIGKILL when the command must be stopped.
    """

    name: ClassVar[str] = "execute_command"
    description: ClassVar[str] = (
        "Run a shell command with bash in the working directory and return its exit code, output and stderr. "
        "stdin is empty, so interactive commands cannot prompt; long outputs keep their beginning and end."
    )
    parameters: ClassVar[dict[str, JsonValue]] = object_schema(
        {
            "command": {"type": "string", "description": "The command line, run as `bash -c <command>`."},
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "default": DEFAULT_TIMEOUT_MS,
                "description": "Milliseconds before the command and its child processes are stopped (default 30000).",
            },
        },
        required=["command"],
    )

    def __init__(self, root: Path, *, kill_grace: float = 2.0) -> None:
        super().__init__(root)
        self._kill_grace = kill_grace

    async def _run(self, arguments: Arguments) -> str:
        command = arguments.string("command")
        if not command.strip():
            raise ToolError("command is empty")
        timeout_ms = arguments.integer("timeout_ms")
        if not self.root.is_dir():
            raise ToolError(f"Working directory not found: {self.root}")
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _CommandProtocol(loop),
            "bash",
            "-c",
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.root,
            start_new_session=True,
        )
        # A new session makes the child the leader of its own process group, so its pid is the group id.
        group = transport.get_pid()
        try:
            # asyncio.wait never cancels the future it watches: it stays usable after a timeout.
            done, _ = await asyncio.wait({protocol.exited}, timeout=timeout_ms / 1000)
            if not done:
                await stop_process_group(group, self._kill_grace)
                await _settle(protocol)
                raise ToolError(_timeout_message(timeout_ms, protocol))
            held_open = not await _settle(protocol)
            return _result_message(transport.get_returncode(), protocol, held_open)
        except asyncio.CancelledError:
            await stop_process_group(group, self._kill_grace)
            raise
        finally:
            transport.close()


async def _settle(protocol: _CommandProtocol) -> bool:
    """Wait briefly for the exit and for the pipes to close; False when something still holds a pipe open."""
    done, _ = await asyncio.wait({protocol.exited, protocol.pipes_closed}, timeout=_DRAIN_SECONDS)
    return len(done) == 2


def _timeout_message(timeout_ms: int, protocol: _CommandProtocol) -> str:
    # What a command printed before it hung is often why it hung (a prompt, a retry loop).
    parts = [f"Command timed out after {timeout_ms}ms; it and its child processes were stopped."]
    for label, fd in (("Output so far:", 1), ("Stderr so far:", 2)):
        text = protocol.text(fd)
        if text.strip():
            parts += [label, text]
    return "\n".join(parts)


def _result_message(code: int | None, protocol: _CommandProtocol, held_open: bool) -> str:
    status = f"Exit code: {code}"
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            status += f" (killed by {signal.Signals(-code).name})"
    parts = [status, "Output:", protocol.text(1) or "(no output)"]
    stderr = protocol.text(2)
    if stderr:
        parts += ["Stderr:", stderr]
    if held_open:
        parts.append("Note: background processes still hold the output open; what they print later is not captured.")
    return "\n".join(parts)


async def stop_process_group(group: int, grace: float) -> None:
    """Stop every process of a process group: SIGTERM, then SIGKILL for what is left after ``grace`` seconds.

    SIGKILL is sent even when this coroutine is cancelled while it waits.
    """
    _signal_group(group, signal.SIGTERM)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    try:
        # Grandchildren are not our children: nothing reports their end, so their group is polled.
        while process_group_alive(group) and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(_POLL_SECONDS)
    finally:
        if process_group_alive(group):
            _signal_group(group, signal.SIGKILL)


def _signal_group(group: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)


def process_group_alive(group: int) -> bool:
    """Whether a process group still has a running (not zombie) member.

    ``killpg(group, 0)`` also succeeds for zombies, which linger when nothing reaps orphans (PID 1 in many
    containers); where ``/proc`` exists the members' states are read to tell the two apart.
    """
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        pids = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return True
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        # Fields after the parenthesised command name: state, ppid, pgrp, ...
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 3 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False
