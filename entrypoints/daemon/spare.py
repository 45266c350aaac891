"""The next run's process, forked ahead of time: the warm process hands a request to it instead of forking then.

Forking copies the page tables of everything preloaded (a few hundred MB: about 10 ms on an idle machine, several
times that on a busy one) and the new child's first steps fault in its stack and the pages it writes. A spare pays
both while the warm process is idle, then waits on its own socket pair; a run request arrives there with the
client's descriptors, exactly as the warm process received it. A spare holds nothing of a run until that moment,
and ends when its socket pair closes (the warm process stopping, or dying).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from typing import Any

from ironhive.daemon.protocol import ProtocolError, receive, send

MAX_DESCRIPTORS = 8


class Spare:
    """A forked child waiting for a request: its pid, a pidfd to see it end, and the warm process's end of the pair.

    Args:
        pid: The spare's process id.
        channel: The warm process's end of the socket pair.
        report: The read end of the pipe on which the run will report its exit code (the run's, once handed over).
    """

    __slots__ = ("channel", "pid", "pidfd", "report")

    def __init__(self, pid: int, channel: socket.socket, report: int) -> None:
        self.pid = pid
        self.channel = channel
        self.report = report
        self.pidfd = os.pidfd_open(pid)

    def hand_over(self, message: dict[str, Any], fds: list[int]) -> bool:
        """Send the request and its descriptors to the spare; ``False`` when it is gone (then fork instead)."""
        try:
            send(self.channel, message, fds)
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Close the warm process's end of the pair (a spare still waiting then exits)."""
        self.channel.close()

    def discard(self) -> None:
        """End a spare that was not used and reap it."""
        self.close()
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        os.close(self.pidfd)
        os.close(self.report)


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """The warm process's end and the spare's end of a new socket pair."""
    server_end, spare_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return server_end, spare_end


def await_request(channel: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """In the spare: wait for the request and its descriptors; exit when the warm process closes the pair first.

    The stop signals the warm process catches are reset first, so ``kill`` ends a waiting spare as any process.
    """
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    fds: list[int] = []
    try:
        data, fds, _flags, _address = socket.recv_fds(channel, 1 << 16, MAX_DESCRIPTORS)
        if not data:
            os._exit(0)
        message = receive(channel, data)
    except (OSError, ProtocolError):
        os._exit(1)  # a request that did not arrive whole: its client sees the run fail, never run half-read
    finally:
        channel.close()
    return message, fds
