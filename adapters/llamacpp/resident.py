"""A per-user resident llama.cpp worker: the model stays loaded, and its evaluated prompt in memory, between runs.

A keyless one-shot spends most of a second run starting a worker: importing llama.cpp, loading the model and
restoring the prompt state from disk. With a :class:`ResidentPlace` (where the warm process is on, see
``ironhive.cli.early_local``) the run instead connects to a worker that kept all of that from the run before
(:mod:`ironhive.adapters.llamacpp.resident_server`), or starts one that stays after it. It speaks the same frames as a
child worker, over a Unix socket.

Safety:

- One resident per set of load settings, code and environment that shape llama.cpp (:func:`resident_key`): a change
  of any of them (another model, context, llama-cpp-python, ironhive) reaches a new resident, never a stale one.
- One run at a time: a run holds ``<key>.use`` (an flock) while it uses the resident; a second run at the same time
  starts an ordinary child worker instead of waiting.
- Private: the folder must be a directory of this user with mode 0700, the socket is 0600, and each side checks the
  other's uid (``SO_PEERCRED``).
- It ends after ``idle_seconds`` without a run, on ``ironhive daemon stop`` (:func:`stop_all`), or when it crashes; a
  crash reaches the run that was using it as the crash of a child worker would (the fault handler's report in its log
  names the signal).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import itertools
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ironhive.adapters.llamacpp.frames import FrameError, encode_frame, read_frame, write_frame

SERVER_MODULE: Final = "ironhive.adapters.llamacpp.resident_server"
MAX_SOCKET_PATH: Final = 107
START_SECONDS: Final = 5.0
"""How long a run waits for a resident it started to listen (it binds before importing anything heavy)."""
HELLO_SECONDS: Final = 5.0
"""How long a run waits for a resident's greeting (it may be finishing the previous run's prefix-cache write)."""
TAIL_BYTES: Final = 16_384
_ENVIRONMENT_PREFIXES: Final = ("GGML", "LLAMA", "OMP_", "KMP_", "GOMP", "OPENBLAS", "MKL", "CUDA", "HIP", "PYTHON")
_KEPT_VARIABLES: Final = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_", "TZ", "TMPDIR", "LD_")
"""Besides those that shape llama.cpp (in the key), what a resident keeps of the environment of the run that started
it: no API keys or other settings of that run live on in a process that serves later ones."""
_FATAL: Final = {
    "Segmentation fault": -11,
    "Illegal instruction": -4,
    "Bus error": -7,
    "Floating-point exception": -8,
    "Floating point exception": -8,
    "Aborted": -6,
}
_PEERCRED: Final = struct.Struct("3i")


@dataclass(frozen=True, kw_only=True, slots=True)
class ResidentPlace:
    """Where residents of this user live and how long they wait for the next run.

    Attributes:
        directory: A private folder (0700, this user's): the warm process's runtime folder.
        idle_seconds: How long a resident waits for a run before it exits.
    """

    directory: Path
    idle_seconds: float


@dataclass(frozen=True, slots=True)
class ResidentPaths:
    """The files of one resident in its folder."""

    directory: Path
    key: str

    @property
    def socket(self) -> Path:
        """Where it listens."""
        return self.directory / f"lm-{self.key}.sock"

    @property
    def use_lock(self) -> Path:
        """Held (flock) by the run using it."""
        return self.directory / f"lm-{self.key}.use"

    @property
    def alive_lock(self) -> Path:
        """Held (flock) by the resident while it runs: at most one per key."""
        return self.directory / f"lm-{self.key}.lock"

    @property
    def log(self) -> Path:
        """Its stderr: llama.cpp's log and, should native code crash, the fault handler's report."""
        return self.directory / f"lm-{self.key}.log"


def resident_key(settings: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str:
    """The name of the resident that fits ``settings``: their JSON, the model file's size and mtime, the interpreter,
    ironhive's local-model code and llama-cpp-python (each file's size and mtime), and the environment llama.cpp reads.
    """
    environ = os.environ if environ is None else environ
    parts = [sys.executable, json.dumps(dict(settings), sort_keys=True, default=str)]
    files = [Path(str(settings.get("model_path", ""))), *sorted(Path(__file__).resolve().parent.glob("*.py"))]
    spec = importlib.util.find_spec("llama_cpp")
    if spec is not None and spec.origin:
        files.append(Path(spec.origin))
    for path in files:
        try:
            info = path.stat()
        except OSError:
            parts.append(f"{path}:missing")
        else:
            parts.append(f"{path}:{info.st_size}:{info.st_mtime_ns}")
    parts += sorted(f"{name}={value}" for name, value in environ.items() if name.startswith(_ENVIRONMENT_PREFIXES))
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def check_private_directory(directory: Path) -> None:
    """Raise ``OSError`` unless ``directory`` is a real directory of this user that nobody else may enter."""
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise PermissionError(f"{directory} is not a private directory of this user")


def peer_ids(sock: socket.socket) -> tuple[int, int]:
    """The process id and user id of the other end of a Unix socket."""
    pid, uid, _ = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
    return pid, uid


def acquire(settings: Mapping[str, Any], place: ResidentPlace) -> ResidentWorker | None:
    """Connect to the resident fitting ``settings`` (starting it if none runs) and hold it for this run.

    Returns:
        The connection, or ``None`` when there is none to be had: another run is using it, the folder is not private,
        the socket path is too long, or the resident did not start or answer. The caller then starts a child worker.
    """
    try:
        check_private_directory(place.directory)
        paths = ResidentPaths(place.directory, resident_key(settings))
        if len(os.fsencode(paths.socket)) > MAX_SOCKET_PATH:
            return None
        lock = os.open(paths.use_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return None
    # A resident that is just dying (a crash's last moments, or leaving when idle) hangs up: start another, once.
    for _ in range(2):
        sock = _connect_or_start(paths, place.idle_seconds)
        if sock is None:
            break
        pid, uid = peer_ids(sock)
        answer = _greet(sock) if uid == os.getuid() else "foreign"
        if answer == "ok":
            return ResidentWorker(sock, lock, paths, pid)
        sock.close()
        if answer == "timeout":
            # A resident that does not greet a run in time is wedged (in native code, say): it would cost every
            # later run the same wait, so it is ended and the next run starts a fresh one.
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if answer != "gone":
            break
        time.sleep(0.05)
    os.close(lock)  # releases the flock
    return None


def stop_all(directory: Path) -> int:
    """Ask every resident in ``directory`` to exit (one serving a run finishes it first); how many were asked."""
    asked = 0
    try:
        check_private_directory(directory)
        sockets = sorted(directory.glob("lm-*.sock"))
    except OSError:
        return 0
    for path in sockets:
        sock = _connect(path)
        if sock is None:
            continue
        with contextlib.closing(sock), sock.makefile("wb") as stream:
            try:
                write_frame(stream, {"op": "shutdown"})
            except OSError:
                continue
        asked += 1
    return asked


class ResidentWorker:
    """This run's connection to a resident: the interface of a child worker (``WorkerProcess``) over a socket.

    Args:
        sock: The connected socket (checked to belong to this user, greeted).
        lock: The descriptor holding ``<key>.use``; closed with the connection.
        paths: The resident's files.
        pid: The resident's process id.
    """

    def __init__(self, sock: socket.socket, lock: int, paths: ResidentPaths, pid: int) -> None:
        self._sock = sock
        self._lock_fd = lock
        self._paths = paths
        self._pid = pid
        self._reader = sock.makefile("rb")
        self._writer = sock.makefile("wb")
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._closed = False

    @property
    def pid(self) -> int:
        """The resident's process id."""
        return self._pid

    @property
    def alive(self) -> bool:
        """Whether the connection is open and the resident still runs."""
        return not self._closed and _running(self._pid)

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines of the resident's log."""
        try:
            with self._paths.log.open("rb") as file:
                file.seek(max(0, file.seek(0, os.SEEK_END) - TAIL_BYTES))
                text = file.read().decode("utf-8", errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if line.strip()][-40:]

    def next_id(self) -> int:
        """A fresh request id."""
        return next(self._ids)

    def send(self, payload: Mapping[str, object]) -> bool:
        """Send one frame; ``False`` when the resident no longer reads."""
        with self._write_lock:
            try:
                write_frame(self._writer, payload)
            except (OSError, ValueError):
                return False
        return True

    def receive(self) -> dict[str, Any] | None:
        """The next frame; ``None`` once the connection has ended (the resident died) or is garbled."""
        try:
            return read_frame(self._reader)
        except (FrameError, OSError, ValueError):
            return None

    def exit_status(self, timeout: float = 5.0) -> int | None:
        """After the connection ended: the resident's exit status as a child's would read (negative: the signal its
        fault handler reported), ``1`` for another exit, ``None`` while it still runs."""
        deadline = time.monotonic() + timeout
        while _running(self._pid):
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)
        for line in reversed(self.stderr_tail):
            for name, status in _FATAL.items():
                if line.startswith("Fatal Python error") and name in line:
                    return status
        return 1

    def close(self, timeout: float = 0.0) -> None:
        """End this run's use: the resident keeps the model and the evaluated prompt for the next run."""
        del timeout  # nothing to wait for: the resident goes on (and writes the prefix cache) by itself
        if self._closed:
            return
        self._closed = True
        self.send({"op": "close"})
        for stream in (self._writer, self._reader):
            with contextlib.suppress(OSError):
                stream.close()
        with contextlib.suppress(OSError):
            self._sock.close()
        os.close(self._lock_fd)


def _connect_or_start(paths: ResidentPaths, idle_seconds: float) -> socket.socket | None:
    """A connection to the key's resident, started first when none listens; ``None`` if it did not start in time."""
    sock = _connect(paths.socket)
    if sock is None:
        _start(paths, idle_seconds)
        deadline = time.monotonic() + START_SECONDS
        while sock is None and time.monotonic() < deadline:
            time.sleep(0.01)
            sock = _connect(paths.socket)
    return sock


def _greet(sock: socket.socket) -> str:
    """``ok`` when the resident answers ``hello`` in time, ``gone`` when it hung up, ``timeout`` when it is silent
    (it may be finishing the previous run's cache write: the wait is generous)."""
    sock.settimeout(HELLO_SECONDS)
    try:
        sock.sendall(encode_frame({"op": "hello", "id": 0}))
        with sock.makefile("rb") as stream:
            reply = read_frame(stream)
    except TimeoutError:
        return "timeout"
    except (FrameError, OSError):
        return "gone"
    finally:
        with contextlib.suppress(OSError):
            sock.settimeout(None)
    return "ok" if reply is not None and reply.get("type") == "hello" else "gone"


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(1.0)
        sock.connect(os.fsdecode(path))
        sock.settimeout(None)
    except OSError:
        sock.close()
        return None
    return sock


def _start(paths: ResidentPaths, idle_seconds: float) -> None:
    """Start a resident; its launcher returns at once (the resident forks off and belongs to no run)."""
    # -P: the current folder (an untrusted repository, perhaps) is not put on the resident's import path.
    command = [sys.executable, "-P", "-m", SERVER_MODULE, str(paths.directory), paths.key, repr(float(idle_seconds))]
    kept = _ENVIRONMENT_PREFIXES + _KEPT_VARIABLES
    with subprocess.Popen(
        command,
        env={name: value for name, value in os.environ.items() if name.startswith(kept)},
        cwd="/",  # holds no run's folder
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # no terminal's signals (Ctrl+C in the run) reach it
    ) as launcher:
        try:
            launcher.wait(START_SECONDS)
        except subprocess.TimeoutExpired:
            launcher.kill()


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody has reaped yet does not: where no init reaps, one stays for long)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A leader thread is a zombie while the process's other threads are still exiting (with its files open).
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return True
    for task in tasks:
        try:
            state = (task / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            return True
    return False
