"""The execute_command tool: ``bash -c``, sandboxed where it can be, with a timeout that stops all it started."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import secrets
import signal
import subprocess
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ironhive.adapters.tools.arguments import Arguments, object_schema
from ironhive.adapters.tools.base import BuiltInTool
from ironhive.adapters.tools.sandbox import CommandSandbox
from ironhive.domain.errors import ToolError
from ironhive.ports.chat import JsonValue

HEAD_CHARS = 20_000
"""Characters kept from the start of each output stream."""
TAIL_CHARS = 30_000
"""Characters kept from the end of each output stream: where builds and tests print the error and the summary."""
DEFAULT_TIMEOUT_MS = 30_000
RUN_MARKER_VARIABLE = "IRONHIVE_COMMAND_RUN"
"""Set to a fresh token in each command's environment: processes that left the command's process group (``setsid``)
still carry it, so they are found and stopped with the rest."""

_DRAIN_SECONDS = 0.5
_POLL_SECONDS = 0.02
_KILL_ROUNDS = 5


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

    The command runs as ``bash -c`` in a new session (its own process group) with stdin from ``/dev/null``, inside
    the sandbox where one can run (see :class:`~ironhive.adapters.tools.sandbox.CommandSandbox`). On timeout or
    cancellation every process of the command gets SIGTERM, then SIGKILL after ``kill_grace`` seconds: the members of
    its group, every process whose environment carries the run's :data:`RUN_MARKER_VARIABLE` token (a ``setsid``
    child), and their descendants; in the sandbox its PID namespace also dies with it. A non-zero exit code is a
    normal result, so the model sees it.

    Args:
        root: The working directory the command runs in.
        kill_grace: Seconds between SIGTERM and SIGKILL when the command must be stopped.
        sandbox: Where commands run (no sandbox when omitted).
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

    def __init__(self, root: Path, *, kill_grace: float = 2.0, sandbox: CommandSandbox | None = None) -> None:
        super().__init__(root)
        self._kill_grace = kill_grace
        self._sandbox = sandbox

    async def _run(self, arguments: Arguments) -> str:
        command = arguments.string("command")
        if not command.strip():
            raise ToolError("command is empty")
        timeout_ms = arguments.integer("timeout_ms")
        if not self.root.is_dir():
            raise ToolError(f"Working directory not found: {self.root}")
        argv = ["bash", "-c", command]
        if self._sandbox is not None:
            argv = await self._sandbox.command_line(argv, self.root)
        token = secrets.token_hex(16)
        environment = {**os.environ, RUN_MARKER_VARIABLE: token}
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _CommandProtocol(loop),
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.root,
            env=environment,
            start_new_session=True,
        )
        # A new session makes the child the leader of its own process group, so its pid is the group id.
        run = CommandProcesses(transport.get_pid(), f"{RUN_MARKER_VARIABLE}={token}")
        try:
            # asyncio.wait never cancels the future it watches: it stays usable after a timeout.
            done, _ = await asyncio.wait({protocol.exited}, timeout=timeout_ms / 1000)
            if not done:
                await stop_command(run, self._kill_grace)
                await _settle(protocol)
                raise ToolError(_timeout_message(timeout_ms, protocol))
            held_open = not await _settle(protocol)
            return _result_message(transport.get_returncode(), protocol, held_open)
        except asyncio.CancelledError:
            await stop_command(run, self._kill_grace)
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


class CommandProcesses:
    """Finds the processes of one command run, and remembers each one it found.

    A process found once stays found while it runs: a child that cleared its environment and left the group is known
    only as a descendant, and once its parent dies it is orphaned and the scan alone would lose it.

    Args:
        group: The process group it started in (the first process's pid).
        marker: The ``NAME=token`` entry its environment carries.
    """

    def __init__(self, group: int, marker: str) -> None:
        self.group = group
        self._needle = marker.encode()
        self._known: dict[int, str] = {}  # pid -> start time, so a reused pid is not taken for a known process

    def pids(self) -> set[int]:
        """The running (not zombie) processes of the run: its group, the marker's carriers, their descendants, and
        those found before that still run.

        Without ``/proc`` only the group can be found, and this is empty; :func:`stop_command` still signals it.
        """
        table = _process_table()
        if table is None:
            return set()
        own = os.getpid()
        children: dict[int, list[int]] = {}
        found: set[int] = set()
        for pid, entry in table.items():
            children.setdefault(entry.parent, []).append(pid)
            known = self._known.get(pid) == entry.started
            if pid != own and (known or entry.group == self.group or _carries(pid, self._needle)):
                found.add(pid)
        pending = list(found)
        while pending:
            for child in children.get(pending.pop(), ()):
                if child not in found and child != own:
                    found.add(child)
                    pending.append(child)
        running = {pid for pid in found if table[pid].state not in ("Z", "X")}
        self._known.update((pid, table[pid].started) for pid in running)
        return running

    def alive(self) -> bool:
        """Whether any process of the run still runs."""
        if _process_table() is None:
            return process_group_alive(self.group)
        return bool(self.pids())


async def stop_command(run: CommandProcesses, grace: float) -> None:
    """Stop every process of a command run: SIGTERM, then SIGKILL for what is left after ``grace`` seconds.

    SIGKILL is sent even when this coroutine is cancelled while it waits.
    """
    termed = _signal_run(run, signal.SIGTERM, set())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    try:
        # Grandchildren are not our children: nothing reports their end, so they are polled.
        while run.alive() and loop.time() < deadline:
            await asyncio.sleep(_POLL_SECONDS)
            termed |= _signal_run(run, signal.SIGTERM, termed)  # what was forked since
    finally:
        killed: set[int] = set()
        for _ in range(_KILL_ROUNDS):
            # A process forked between a scan and its SIGKILLs is found by the next scan.
            fresh = _signal_run(run, signal.SIGKILL, killed)
            if not fresh:
                break
            killed |= fresh


def _signal_run(run: CommandProcesses, signum: signal.Signals, done: set[int]) -> set[int]:
    """Signal each process of the run not in ``done``, and its group; return the pids signalled.

    The scan comes first: a parent killed before it would orphan its children and hide their descent.
    """
    fresh = run.pids() - done
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(run.group, signum)
    for pid in fresh:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
    return fresh


@dataclass(frozen=True, slots=True)
class _ProcessEntry:
    state: str
    parent: int
    group: int
    started: str


def _process_table() -> dict[int, _ProcessEntry] | None:
    """Every process's state, parent, group and start time from ``/proc`` (``None`` where there is no ``/proc``)."""
    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return None
    table: dict[int, _ProcessEntry] = {}
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        # Fields after the parenthesised command name: state, ppid, pgrp, ...; the start time is the 20th.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 20:
            table[int(entry)] = _ProcessEntry(fields[0], int(fields[1]), int(fields[2]), fields[19])
    return table


def _carries(pid: int, needle: bytes) -> bool:
    """Whether a process's environment (as it was at its ``exec``) holds the entry ``needle``."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return needle in handle.read().split(b"\0")
    except OSError:
        return False


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
    table = _process_table()
    if table is None:
        return True
    return any(entry.group == group and entry.state not in ("Z", "X") for entry in table.values())
