"""The warm process: imports what a run needs, then forks one child per request on its private Unix socket.

It reads no configuration, opens no client, starts no thread and no event loop: everything a run depends on (its
environment, directory, configuration layers) is taken by the forked child from the request, so nothing of one run
reaches another. Started by :func:`ironhive.daemon.client.start_server`; stops when idle, on ``ironhive daemon stop``
or SIGTERM (letting running children finish), and as soon as a client reports a different install.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import selectors
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from ironhive import __version__
from ironhive.daemon.paths import LOCK_NAME, LOG_NAME, check_private_directory, socket_path
from ironhive.daemon.preload import preload, prepare_parse, thread_count
from ironhive.daemon.protocol import compatibility_key, install_fingerprint, peer_uid, receive, send
from ironhive.daemon.spare import Spare, await_request, channel_pair

LOCK_WAIT_SECONDS = 5.0
REQUEST_TIMEOUT_SECONDS = 10.0


class Run:
    """A forked child, the connection of the client waiting for it, and the pipe on which the child reports its exit
    code once its output is flushed and closed (``report``; -1 once read); ``replied`` once the client has its code."""

    __slots__ = ("connection", "pid", "pidfd", "replied", "report")

    def __init__(self, pid: int, pidfd: int, report: int, connection: socket.socket) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.report = report
        self.connection = connection
        self.replied = False


class Forked:
    """What :meth:`Server.serve` returns in a forked child: the request to run, and where to report its exit code."""

    __slots__ = ("fds", "message", "report")

    def __init__(self, message: dict[str, Any], fds: list[int], report: int) -> None:
        self.message = message
        self.fds = fds
        self.report = report


class Server:
    """The accept loop.

    Args:
        directory: The private runtime directory (checked by the caller).
        idle_seconds: How long to wait for a run before exiting (each request may change it).
        check_peer: Returns the peer's uid; replaceable so tests can play another user.
    """

    def __init__(
        self, directory: str, idle_seconds: float, *, check_peer: Callable[[socket.socket], int] = peer_uid
    ) -> None:
        self.directory = directory
        self.idle_seconds = idle_seconds
        self.check_peer = check_peer
        self.uid = os.getuid()
        self.runs: dict[int, Run] = {}
        self.spare: Spare | None = None
        self.use_spares = True
        self.served = 0
        self.started = time.time()
        self.last_activity = time.monotonic()
        self.stopping = False
        self.fingerprint = install_fingerprint(__version__)
        self.compat = compatibility_key(os.environ)
        self.source_paths = _source_paths()  # the server imports nothing more: the list is read once
        self.sources = _stamps(self.source_paths)
        self.selector = selectors.DefaultSelector()
        self.listener: socket.socket | None = None
        self.inode = 0
        self.lock_fd = -1
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_read, False)
        os.set_blocking(self.wake_write, False)

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def listen(self, lock_fd: int) -> None:
        """Bind the socket (mode 0600) while holding the directory's lock; install the stop signals."""
        self.lock_fd = lock_fd
        path = socket_path(self.directory)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # the lock is ours: any socket left is stale
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(previous)
        os.chmod(path, 0o600)
        listener.listen(64)
        self.inode = os.stat(path).st_ino
        self.listener = listener
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wake_read, selectors.EVENT_READ, "wake")
        signal.set_wakeup_fd(self.wake_write)
        for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(number, self._stop_signal)

    def _stop_signal(self, _number: int, _frame: object) -> None:
        self.stopping = True

    def close_listener(self) -> None:
        """Stop accepting: remove the socket (if it is still ours), release the lock for a successor, end the spare."""
        if self.listener is not None:
            self.selector.unregister(self.listener)
            path = socket_path(self.directory)
            with contextlib.suppress(OSError):
                if os.stat(path).st_ino == self.inode:
                    os.unlink(path)
            self.listener.close()
            self.listener = None
            os.close(self.lock_fd)
            self.lock_fd = -1
        if self.spare is not None:
            self.selector.unregister(self.spare.pidfd)
            self.spare.discard()
            self.spare = None

    def serve(self) -> Forked | None:
        """Serve until stopped and every run has ended (``None``), or return the request in a forked child."""
        while True:
            if self.stopping:
                self.close_listener()
            if self.listener is None and not self.runs:
                return None
            if self.use_spares and self.spare is None and self.listener is not None and not self.runs:
                forked = self._fork_spare()  # while idle: a run in progress keeps both cores
                if forked is not None:
                    return forked
            timeout = None
            if not self.runs:
                timeout = max(0.0, self.last_activity + self.idle_seconds - time.monotonic())
            events = self.selector.select(timeout)
            if not events and not self.runs and time.monotonic() >= self.last_activity + self.idle_seconds:
                _log(self.directory, "idle: exiting")
                self.stopping = True
            for key, _mask in events:
                forked = self._handle(key.data)
                if forked is not None:
                    return forked

    def _handle(self, data: object) -> Forked | None:
        if data == "wake":
            with contextlib.suppress(OSError):
                os.read(self.wake_read, 4096)
        elif data == "accept" and self.listener is not None:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return None
            return self._accept(connection)
        elif isinstance(data, tuple) and data[0] == "spare":
            self._spare_ended()
        elif isinstance(data, tuple):
            kind, pid = data
            run = self.runs.get(pid)
            if run is not None and kind == "exit":
                self._reap(run)
            elif run is not None and kind == "report":
                self._reported(run)
            elif run is not None:
                self._from_client(run)
        return None

    # -- requests --------------------------------------------------------------------------------------------------

    def _accept(self, connection: socket.socket) -> Forked | None:
        self.last_activity = time.monotonic()
        try:
            if self.check_peer(connection) != self.uid:
                _log(self.directory, "refused a connection from another user")
                connection.close()
                return None
            connection.settimeout(REQUEST_TIMEOUT_SECONDS)
            data, fds, _flags, _address = socket.recv_fds(connection, 1 << 16, 8)
            try:
                message = receive(connection, data)
            except OSError:
                _close_all(fds)
                raise
        except OSError:
            connection.close()
            return None
        operation = message.get("op")
        if operation == "run":
            return self._run(connection, message, fds)
        _close_all(fds)
        with connection:
            if operation == "status":
                self._reply(connection, self.status())
            elif operation == "stop":
                _log(self.directory, "stop requested")
                self.stopping = True
                self._reply(connection, {"status": "stopping"})
        return None

    def status(self) -> dict[str, Any]:
        """What ``ironhive daemon status`` shows."""
        return {
            "status": "running",
            "pid": os.getpid(),
            "version": __version__,
            "started": self.started,
            "served": self.served,
            "active": len(self.runs),
            "spare": self.spare.pid if self.spare is not None else None,
            "idle": self.idle_seconds,
            "socket": socket_path(self.directory),
        }

    def _run(self, connection: socket.socket, message: dict[str, Any], fds: list[int]) -> Forked | None:
        if message.get("fingerprint") != self.fingerprint or _stamps(self.source_paths) != self.sources:
            _log(self.directory, "another install asked: exiting for a new server")
            _close_all(fds)
            self.stopping = True
            self.close_listener()  # the lock is free before the client, told, starts the successor
            self._reply(connection, {"status": "stale"})
            connection.close()
            return None
        if message.get("compat") != self.compat:
            _close_all(fds)
            self._reply(connection, {"status": "incompatible"})
            connection.close()
            return None
        idle = message.get("idle")
        if isinstance(idle, int | float) and idle > 0:
            self.idle_seconds = float(idle)
        started = self._hand_to_spare(message, fds)
        if started is None:
            report, report_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(report)
                self._become_child(connection)
                return Forked(message, fds, report_end)
            os.close(report_end)
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)  # also done by the child: whichever runs first, signals reach its group
            started = (pid, os.pidfd_open(pid), report)
        _close_all(fds)
        pid = started[0]
        self.served += 1
        run = Run(pid, started[1], started[2], connection)
        self.runs[pid] = run
        self.selector.register(run.pidfd, selectors.EVENT_READ, ("exit", pid))
        self.selector.register(run.report, selectors.EVENT_READ, ("report", pid))
        if self._reply(connection, {"status": "started", "pid": pid}):
            connection.settimeout(None)
            self.selector.register(connection, selectors.EVENT_READ, ("client", pid))
        return None

    def _fork_spare(self) -> Forked | None:
        """Fork the next run's process now; in that process, wait for its request and return it."""
        server_end, spare_end = channel_pair()
        report, report_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            server_end.close()
            os.close(report)
            self._become_child(None)
            message, fds = await_request(spare_end)
            return Forked(message, fds, report_end)
        spare_end.close()
        os.close(report_end)
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # a group of its own before any client can signal it
        self.spare = Spare(pid, server_end, report)
        self.selector.register(self.spare.pidfd, selectors.EVENT_READ, ("spare", pid))
        return None

    def _hand_to_spare(self, message: dict[str, Any], fds: list[int]) -> tuple[int, int, int] | None:
        """The spare's pid, pidfd and report pipe once it has the request; ``None`` when there is none to take it."""
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        self.selector.unregister(spare.pidfd)
        if not spare.hand_over(message, fds):
            spare.discard()
            self._spare_failed()
            return None
        spare.close()
        return spare.pid, spare.pidfd, spare.report

    def _spare_ended(self) -> None:
        """A spare ended before any request reached it: reaped, and no more spares (forking per run still works)."""
        if self.spare is not None:
            self.selector.unregister(self.spare.pidfd)
            self.spare.discard()
            self.spare = None
        self._spare_failed()

    def _spare_failed(self) -> None:
        self.use_spares = False
        _log(self.directory, "a spare process ended unused: forking per run from now on")

    def _become_child(self, connection: socket.socket | None) -> None:
        """Drop everything of the server in a fresh child: its socket, lock, selector, pipe, spare and other runs."""
        signal.set_wakeup_fd(-1)
        if connection is not None:
            connection.close()
        if self.listener is not None:
            self.listener.close()
        if self.lock_fd >= 0:
            os.close(self.lock_fd)
        for run in self.runs.values():
            run.connection.close()
            os.close(run.pidfd)
            if run.report >= 0:
                os.close(run.report)
        if self.spare is not None:
            self.spare.close()
            os.close(self.spare.pidfd)
            os.close(self.spare.report)
        self.selector.close()
        os.close(self.wake_read)
        os.close(self.wake_write)

    def _reported(self, run: Run) -> None:
        """The child's exit code, sent once its output is flushed and closed: the client has it at once, while the
        child's memory is still being freed. Nothing (end of file) when it ended another way: then its reaping tells."""
        try:
            data = os.read(run.report, 16)
        except OSError:
            data = b""
        self._close_report(run)
        if not data.isdigit():
            return
        self._reply(run.connection, {"status": "exited", "code": int(data)})
        run.replied = True
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(run.connection)
        run.connection.close()

    def _close_report(self, run: Run) -> None:
        if run.report >= 0:
            self.selector.unregister(run.report)
            os.close(run.report)
            run.report = -1

    def _from_client(self, run: Run) -> None:
        try:
            message = receive(run.connection)
        except OSError:  # the client went away: its run goes with it, as it would have in its own process
            with contextlib.suppress(OSError):
                os.kill(run.pid, signal.SIGKILL)
            self.selector.unregister(run.connection)
            return
        number = message.get("signal")
        if not isinstance(number, int):
            return
        with contextlib.suppress(OSError):
            if message.get("group"):
                os.killpg(run.pid, number)
            else:
                os.kill(run.pid, number)

    def _reap(self, run: Run) -> None:
        _, status = os.waitpid(run.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        reply = {"status": "signaled", "signal": -code} if code < 0 else {"status": "exited", "code": code}
        if not run.replied:
            self._reply(run.connection, reply)
        self._close_report(run)
        self.selector.unregister(run.pidfd)
        os.close(run.pidfd)
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(run.connection)
        run.connection.close()
        del self.runs[run.pid]
        self.last_activity = time.monotonic()

    @staticmethod
    def _reply(connection: socket.socket, message: dict[str, Any]) -> bool:
        try:
            send(connection, message)
        except OSError:
            return False
        return True


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _source_stamps() -> dict[str, int]:
    """Modification times of the loaded ironhive modules: an edited source makes the server stale."""
    return _stamps(_source_paths())


def _source_paths() -> list[str]:
    """The files of the loaded ironhive modules. The name is tested first, as reading ``__file__`` from each of the
    thousands of modules loaded (some with a module ``__getattr__``) cost about as much as the ``stat`` calls; the
    server lists them once, and only stats them on each run request (before the fork, so the list costs 4x that)."""
    paths = []
    for name, module in list(sys.modules.items()):
        if name != "ironhive" and not name.startswith("ironhive."):
            continue
        path = getattr(module, "__file__", None)
        if path:
            paths.append(path)
    return paths


def _stamps(paths: list[str]) -> dict[str, int]:
    stamps: dict[str, int] = {}
    for path in paths:
        try:
            stamps[path] = os.stat(path).st_mtime_ns
        except OSError:
            stamps[path] = 0
    return stamps


def _log(directory: str, line: str) -> None:
    with contextlib.suppress(OSError):
        descriptor = os.open(os.path.join(directory, LOG_NAME), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "a", encoding="utf-8") as stream:
            stream.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {line}\n")


def _take_lock(directory: str) -> int | None:
    descriptor = os.open(os.path.join(directory, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return descriptor
        except OSError:
            if time.monotonic() >= deadline:
                os.close(descriptor)
                return None
            time.sleep(0.05)


def main(directory: str, idle_seconds: float) -> None:
    """The warm process's entry point; in a forked child, runs the CLI and exits with its code.

    Args:
        directory: The private runtime directory.
        idle_seconds: How long to wait for a run before exiting.
    """
    try:
        check_private_directory(directory, os.getuid())
    except OSError:
        return
    lock_fd = _take_lock(directory)
    if lock_fd is None:
        return  # another server holds the directory
    missing = preload()
    prepare_parse()
    gc.collect()
    gc.freeze()  # the preloaded objects are never collected: no GC pass in a child touches (and copies) their pages
    if thread_count() > 1:  # forking a threaded process is unsafe: a preloaded module started a thread
        _log(directory, f"not serving: {thread_count()} threads after preloading")
        return
    server = Server(directory, idle_seconds)
    server.listen(lock_fd)
    _log(directory, f"serving ironhive {__version__}" + (f" (not preloaded: {', '.join(missing)})" if missing else ""))
    forked = server.serve()
    if forked is None:
        _log(directory, "stopped")
        return
    from ironhive.daemon.child import become_run
    from ironhive.process_lifecycle import end_process

    args = become_run(forked.message, forked.fds)
    from ironhive.cli.app import run_app

    end_process(run_app(args), forked.report)  # an exception propagates instead, as in a direct run
