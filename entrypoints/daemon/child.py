"""Turns a fork of the warm process into the client's run: its stdio, directory, environment, umask and signals."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import time
from typing import Any, TextIO

STREAMS = ("stdin", "stdout", "stderr")
DEFAULT_SIGNALS = (
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGWINCH,
    signal.SIGTSTP,
    signal.SIGCONT,
    signal.SIGCHLD,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
)


def become_run(message: dict[str, Any], fds: list[int]) -> list[str]:
    """Take over the client's process state, as a direct run of ``ironhive`` would have it.

    Args:
        message: The client's run request (``args``, ``argv0``, ``cwd``, ``env``, ``umask``, ``ignored``, ``fds``).
        fds: The descriptors received with it, in the order ``message["fds"]`` names them.

    Returns:
        The command-line arguments to run.
    """
    received = dict(zip(message["fds"], fds, strict=False))
    for target, name in enumerate(STREAMS):
        if name in received:
            os.dup2(received[name], target)
        else:
            with contextlib.suppress(OSError):
                os.close(target)
    try:
        if "cwd" in received:
            os.fchdir(received["cwd"])
        else:
            os.chdir(message["cwd"])
    except OSError:
        pass
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.environ.clear()
    os.environ.update(message["env"])
    os.umask(message["umask"])
    time.tzset()
    sys.argv = [message["argv0"], *message["args"]]
    _reset_signals(frozenset(message["ignored"]))
    _reopen_stdio(frozenset(received))
    return list(message["args"])


def _reset_signals(ignored: frozenset[int]) -> None:
    """Python's start-up dispositions, with the client's inherited ``SIG_IGN`` kept (as under ``nohup``)."""
    signal.set_wakeup_fd(-1)
    for number in DEFAULT_SIGNALS:
        signal.signal(number, signal.SIG_IGN if number in ignored else signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN if signal.SIGINT in ignored else signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # a group of its own: the client relays terminal signals to the whole group


def _reopen_stdio(present: frozenset[str]) -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` on the client's descriptors, buffered as Python buffers them at start-up
    (line-buffered on a terminal, stderr always), with the encoding the process started with."""
    streams: list[TextIO | None] = []
    for fd, name in enumerate(STREAMS):
        old: TextIO | None = getattr(sys, name)
        streams.append(_stream(fd, old) if name in present else None)
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams  # type: ignore[assignment,misc]


def _stream(fd: int, old: TextIO | None) -> TextIO:
    buffered = not os.environ.get("PYTHONUNBUFFERED")  # ``-u`` is not in sys.flags; the console script never has it
    encoding = old.encoding if old is not None else "utf-8"
    errors = old.errors if old is not None else ("backslashreplace" if fd == 2 else "strict")
    if fd == 0:
        reader = open(fd, "rb", closefd=False)  # noqa: SIM115 - a standard stream, never closed
        return io.TextIOWrapper(reader, encoding=encoding, errors=errors, newline="\n")
    raw = open(fd, "wb", buffering=-1 if buffered else 0, closefd=False)  # noqa: SIM115
    line_buffering = buffered and (fd == 2 or os.isatty(fd))
    return io.TextIOWrapper(
        raw, encoding=encoding, errors=errors, newline="\n", line_buffering=line_buffering, write_through=not buffered
    )
