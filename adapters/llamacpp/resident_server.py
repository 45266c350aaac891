"""The resident llama.cpp worker process: one model kept loaded between runs, served over a private Unix socket.

Started by :func:`ironhive.adapters.llamacpp.resident.acquire` as ``python -m`` this module with the folder, the key
and the idle timeout. It forks off at once (so it belongs to no run), takes ``lm-<key>.lock`` (one resident per key),
listens on ``lm-<key>.sock`` (0600) and writes its stderr to ``lm-<key>.log``. Each connection is one run: its first
frame is ``hello`` (answered with this process's id), ``shutdown`` (the resident exits) or a worker request; then the
same :class:`~ironhive.adapters.llamacpp.worker.Worker` as a child worker's serves the frames until ``close`` or the
end of the connection, keeping the loaded model and the evaluated prompt for the next. A peer of another user is
refused. It exits after the idle timeout without a connection.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.adapters.llamacpp.resident import ResidentPaths, check_private_directory, peer_ids

if TYPE_CHECKING:
    from ironhive.adapters.llamacpp.worker import Worker

LOCK_SECONDS = 2.0
"""How long a new resident waits for one that is exiting to release the key."""


def main(argv: list[str] | None = None) -> None:
    """Fork off (the launcher exits at once) and serve until idle, shut down or crashed."""
    arguments = sys.argv[1:] if argv is None else argv
    directory, key, idle = Path(arguments[0]), arguments[1], float(arguments[2])
    if os.fork() > 0:
        os._exit(0)
    try:
        serve(ResidentPaths(directory, key), idle)
    finally:
        os._exit(0)  # llama.cpp's teardown at interpreter exit is slow and nothing is left to write


def serve(paths: ResidentPaths, idle_seconds: float) -> None:
    """Hold the key's lock, listen on its socket and serve runs one at a time until idle or shut down."""
    check_private_directory(paths.directory)
    alive = os.open(paths.alive_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    if not _lock(alive):
        return  # another resident holds this key
    with contextlib.suppress(FileNotFoundError):
        os.unlink(paths.socket)  # left by a resident that was killed: the lock says none runs
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    umask = os.umask(0o177)  # the socket is 0600 from its first moment
    try:
        listener.bind(os.fsdecode(paths.socket))
    finally:
        os.umask(umask)
    listener.listen(8)
    _detach_stdio(paths.log)
    from ironhive.adapters.llamacpp.worker import Worker

    worker = Worker(os.fdopen(os.dup(1), "wb"))  # replaced by each connection's stream
    listener.settimeout(idle_seconds)
    try:
        while True:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                return
            with connection:
                if peer_ids(connection)[1] != os.getuid():
                    continue
                if not _serve_connection(worker, connection):
                    return
    finally:
        # Gone from the folder before the lock is released: a run never connects to a resident that is leaving.
        with contextlib.suppress(OSError):
            os.unlink(paths.socket)
        listener.close()


def _serve_connection(worker: Worker, connection: socket.socket) -> bool:
    """Serve one run; ``False`` when it asked the resident to shut down."""
    from ironhive.adapters.llamacpp.frames import FrameError, read_frame

    connection.settimeout(None)
    reader, writer = connection.makefile("rb"), connection.makefile("wb")
    try:
        try:
            first = read_frame(reader)
        except (FrameError, OSError):
            return True
        if first is None:
            return True
        if first.get("op") == "shutdown":
            return False
        worker.attach(writer)
        if first.get("op") == "hello":
            worker.send({"type": "hello", "id": first.get("id"), "pid": os.getpid()})
        else:
            worker.enqueue(first)
        thread = threading.Thread(target=worker.read_requests, args=(reader,), name="frames", daemon=True)
        thread.start()
        worker.serve()
        with contextlib.suppress(OSError):
            connection.shutdown(socket.SHUT_RDWR)  # ends the reading thread before the next run's queue exists
        thread.join()
        return True
    finally:
        for stream in (writer, reader):
            with contextlib.suppress(OSError):
                stream.close()


def _lock(descriptor: int) -> bool:
    deadline = time.monotonic() + LOCK_SECONDS
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        else:
            return True


def _detach_stdio(log: Path) -> None:
    """stdin from /dev/null, stdout and stderr to the log; the fault handler reports there; no terminal signals."""
    import faulthandler

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    os.close(null)
    os.close(descriptor)
    faulthandler.enable(file=os.fdopen(os.dup(2), "w"), all_threads=False)


if __name__ == "__main__":
    main()
