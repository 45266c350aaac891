"""The real ``ironhive`` on a pseudo-terminal, with a terminal emulator (pyte) rendering what it draws.

Two ways to wait: ``read_until`` on the raw bytes, and ``wait_for`` on the rendered screen (what a user sees, after
cursor movement, erased lines and redraws). ``lines()`` is the whole rendered scrollback: the lines that scrolled off
the top followed by the screen, so a test can count how often a line was left behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pyte

from tests.support.cli import clean_environment, ironhive_executable

CTRL_C = b"\x03"
CTRL_D = b"\x04"
ENTER = b"\r"
LEFT = b"\x1b[D"
UP = b"\x1b[A"
ALT_ENTER = b"\x1b\r"


class _Screen(pyte.HistoryScreen):
    """A screen that answers the program's queries (cursor position) as a real terminal does."""

    def __init__(self, columns: int, lines: int, reply: Callable[[bytes], None]) -> None:
        super().__init__(columns, lines, history=100_000, ratio=0.5)
        self._reply = reply

    def write_process_input(self, data: str) -> None:
        self._reply(data.encode())


def _controlling_terminal() -> None:
    """In the child, after ``setsid``: make the pty (stdin) the controlling terminal, so Ctrl+C sends SIGINT."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _processes() -> dict[int, tuple[int, int]]:
    """Every live process: pid -> (parent pid, session id) (Linux ``/proc``; empty where there is none)."""
    table = {}
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z":  # after "pid (comm)": state, ppid, pgrp, session
                table[int(entry.name)] = (int(fields[1]), int(fields[3]))
    return table


def leftovers(root: int) -> set[int]:
    """``root``'s session and all its descendants (also those that started a session of their own), still alive."""
    table = _processes()
    found = {pid for pid, (_, session) in table.items() if session == root}
    found |= {root} & table.keys()
    growing = True
    while growing:
        children = {pid for pid, (parent, _) in table.items() if parent in found} - found
        found |= children
        growing = bool(children)
    return found


class Terminal:
    """``ironhive *args`` (or ``program *args``) on a new pseudo-terminal of ``rows`` x ``columns``, in its own session.

    The pty is the child's controlling terminal, so the bytes a user types (Ctrl+C included) mean what they mean on
    a real terminal. ``close`` ends the child and everything it started (other process groups and sessions
    included), whatever state the test left it in. With ``stdout_pipe`` the child's stdout is a pipe instead (a
    script capturing the answer while the terminal shows stderr); :meth:`piped_stdout` reads it once it has exited.
    """

    def __init__(
        self,
        cwd: Path,
        *args: str,
        home: Path,
        env: Mapping[str, str] | None = None,
        rows: int = 24,
        columns: int = 100,
        program: Sequence[str] | None = None,
        stdout_pipe: bool = False,
    ) -> None:
        self._controller, child = pty.openpty()
        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        environment = clean_environment(home, {"TERM": "xterm-256color", **(env or {})})
        for variable in ("COLUMNS", "LINES"):  # the size comes from the terminal, as for a user
            environment.pop(variable, None)
        self.process = subprocess.Popen(
            [*(program or [ironhive_executable()]), *args],
            cwd=cwd,
            env=environment,
            stdin=child,
            stdout=subprocess.PIPE if stdout_pipe else child,
            stderr=child,
            close_fds=True,
            start_new_session=True,
            preexec_fn=_controlling_terminal,
        )
        os.close(child)
        self.seen = b""
        self._read_to = 0
        self.screen = _Screen(columns, rows, self.send)
        self._stream = pyte.ByteStream(self.screen)
        self._closed = False

    def _pump(self, timeout: float) -> bool:
        """Read what arrived within ``timeout`` into ``seen`` and the screen; False once the child's side closed."""
        if not select.select([self._controller], [], [], max(timeout, 0))[0]:
            return True
        try:
            chunk = os.read(self._controller, 65536)
        except OSError:  # EIO: every holder of the pty's other side has closed it
            return False
        if not chunk:
            return False
        self.seen += chunk
        self._stream.feed(chunk)
        return True

    def read_until(self, marker: bytes, timeout: float = 60.0) -> bytes:
        """The raw output after the previous marker found, up to and including ``marker``.

        The search starts where the previous found marker ended, never where the reading stopped: a marker that
        arrived in the same chunk as the one before it is found, and so is one split across two reads.
        """
        start = self._read_to
        deadline = time.monotonic() + timeout
        while (found := self.seen.find(marker, start)) < 0:
            remaining = deadline - time.monotonic()
            alive = remaining > 0 and self._pump(remaining)
            if not alive and (found := self.seen.find(marker, start)) < 0:
                raise AssertionError(f"no {marker!r} ({'ended' if remaining > 0 else 'timed out'}); {self.tail()}")
        self._read_to = found + len(marker)
        return self.seen[start : self._read_to]

    def wait_for(self, check: str | Callable[[str], bool], timeout: float = 60.0) -> str:
        """Wait until the rendered screen contains ``check`` (or satisfies it); returns the screen's text."""
        test = check if callable(check) else (lambda screen: check in screen)
        deadline = time.monotonic() + timeout
        while not test(text := self.display()):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._pump(min(remaining, 0.1)):
                if test(text := self.display()):
                    return text
                raise AssertionError(f"the screen never showed {check!r}; {self.tail()}")
        return text

    def settle(self, quiet: float = 0.5, timeout: float = 10.0) -> None:
        """Read until nothing arrives for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            before = len(self.seen)
            if not self._pump(quiet) or len(self.seen) == before:
                return

    def at_prompt(self, prompt: str = "> ") -> bool:
        """Whether the cursor's line starts with ``prompt`` (the line editor waits for input)."""
        return self.screen.display[self.screen.cursor.y].startswith(prompt)

    def wait_for_prompt(self, prompt: str = "> ", timeout: float = 60.0) -> str:
        """Wait until the cursor sits on a line starting with ``prompt``; returns the screen's text."""
        return self.wait_for(lambda _: self.at_prompt(prompt), timeout)

    def display(self) -> str:
        """The screen as text, one line per row, trailing spaces removed."""
        return "\n".join(line.rstrip() for line in self.screen.display)

    def lines(self) -> list[str]:
        """Every rendered line: those that scrolled off the top, then the screen's."""
        columns = self.screen.columns
        scrolled = ["".join(row[x].data for x in range(columns)).rstrip() for row in self.screen.history.top]
        return [*scrolled, *(line.rstrip() for line in self.screen.display)]

    def tail(self) -> str:
        return f"screen:\n{self.display()}\nraw end: {self.seen[-600:]!r}"

    def send(self, data: bytes) -> None:
        os.write(self._controller, data)

    def type(self, text: str, pause: float = 0.0) -> None:
        """Type ``text`` key by key."""
        for character in text:
            self.send(character.encode())
            if pause:
                time.sleep(pause)

    def wait(self, timeout: float = 60.0) -> int:
        """The exit code, reading the output meanwhile (a child blocked on a full pty would never exit)."""
        deadline = time.monotonic() + timeout
        while (code := self.process.poll()) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"ironhive did not exit; {self.tail()}")
            if not self._pump(0.1):
                time.sleep(0.05)
        self.settle(quiet=0.2, timeout=2)
        return code

    def piped_stdout(self) -> bytes:
        """With ``stdout_pipe``: all the child wrote on stdout (call after :meth:`wait`; a small output only, as the
        pipe is not read while the child runs)."""
        assert self.process.stdout is not None, "the child's stdout is the terminal: see seen"
        return self.process.stdout.read()

    def interrupt(self) -> None:
        """SIGINT to the child's process group, as ``kill -INT`` would send it (not through the terminal)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGINT)

    def close(self) -> None:
        """End the child and everything left in its session, and close the pty (safe to call twice)."""
        if self._closed:
            return
        self._closed = True
        root = self.process.pid  # start_new_session: the child leads its session and its process group
        for _ in range(3):  # a process may start another while the others are being killed
            processes = leftovers(root)
            if not processes:
                break
            groups = {root}
            for pid in processes:  # a tool's command runs in a process group of its own
                with contextlib.suppress(ProcessLookupError):
                    groups.add(os.getpgid(pid))
            for group in groups:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(group, signal.SIGKILL)
            for pid in processes:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()
        os.close(self._controller)


@contextlib.contextmanager
def terminal(cwd: Path, *args: str, home: Path, **settings: object) -> Iterator[Terminal]:
    """A Terminal closed (its whole session killed) however the block ends."""
    term = Terminal(cwd, *args, home=home, **settings)  # type: ignore[arg-type]
    try:
        yield term
    finally:
        term.close()
