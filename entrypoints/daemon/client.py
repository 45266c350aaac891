"""The ``ironhive`` side of the warm path: hand this run to the warm process, or run it here and start one.

Imported before anything heavy (stdlib C modules and the small :mod:`ironhive.daemon` helpers only), so a run that
goes direct pays well under a millisecond for the check.
"""

from __future__ import annotations

import _socket
import os
import sys

from ironhive.daemon.paths import (
    LOCK_NAME,
    UnsafeDirectoryError,
    check_private_directory,
    ensure_private_directory,
    runtime_directory,
    socket_path,
)
from ironhive.daemon.protocol import compatibility_key, install_fingerprint, peer_uid, receive, send
from ironhive.daemon.settings import ENVIRONMENT_VARIABLE, NO_DAEMON_FLAG, Decision, decide, refresh

# Not typing.TYPE_CHECKING, and _signal rather than signal (which imports enum): the client must stay light.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable

    from ironhive.daemon.protocol import Message
else:
    import _signal

WARM_COMMANDS = frozenset({"models", "sessions", "get", "set", "unset", "config", "doctor"})
"""Subcommands that never need a terminal of their own and run the same forked."""
DIRECT_COMMANDS = frozenset({"mcp", "trust", "update", "protocol", "daemon", "completion", "acp", "serve", "worker"})
"""The other subcommands; any other first word is a positional prompt (or a mistyped command: an error either way)."""

VALUE_OPTIONS = frozenset(
    {"-p", "--prompt", "-m", "--model", "--provider", "-o", "--output", "-r", "--resume", "--http", "--session-id"}
    | {"--commit-message", "--approval-timeout", "-n", "--limit"}
)
"""Options whose next token is their value (a ``--no-daemon`` there is a value, not the flag)."""

RELAYED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT, _signal.SIGWINCH)
TERMINAL_SIGNALS = frozenset({_signal.SIGINT, _signal.SIGQUIT, _signal.SIGWINCH, _signal.SIGTSTP, _signal.SIGCONT})
"""Signals a terminal sends to its whole foreground group: relayed to the child's process group."""

STD_STREAMS = ("stdin", "stdout", "stderr")
SERVER_ENVIRONMENT = frozenset({"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "XDG_RUNTIME_DIR"})
"""What the warm process keeps of the environment that started it (besides ``PYTHON*`` and the import-time
variables): no API key or provider setting of that first run stays in a long-lived process."""


def strip_no_daemon(args: list[str]) -> tuple[list[str], bool]:
    """``args`` without the ``--no-daemon`` flag, and whether it was there."""
    kept: list[str] = []
    found = False
    for index, token in enumerate(args):
        if token == "--":
            return kept + args[index:], found
        if token == NO_DAEMON_FLAG and not (kept and kept[-1] in VALUE_OPTIONS):
            found = True
            continue
        kept.append(token)
    return kept, found


def is_warm_command(args: list[str], stdin_is_terminal: bool) -> bool:
    """Whether ``args`` name a non-interactive run: ``-p``, a positional prompt or a piped one, ``run`` without
    ``--server`` or ``--http``, ``models``, ``sessions``, ``get``/``set``/``unset``/``config`` and ``doctor``."""
    if not args:
        return not stdin_is_terminal
    first = args[0]
    if first in WARM_COMMANDS:
        return True
    if first == "run":
        return not any(token in ("--server", "--http") or token.startswith("--http=") for token in args)
    if any(token in ("-h", "--help", "--version") for token in args):
        return False
    if not first.startswith("-"):
        return first not in DIRECT_COMMANDS
    prompt = any(token in ("-p", "--prompt") or token.startswith(("--prompt=", "-p=")) for token in args)
    return prompt or not stdin_is_terminal


def run(args: list[str], direct: Callable[[list[str]], int]) -> int:
    """Run ``ironhive args`` in a child of the warm process when possible, else with ``direct``.

    Args:
        args: The command-line arguments.
        direct: Runs the CLI in this process and returns its exit code.

    Returns:
        The run's exit code. A non-interactive run made here does not return: its process ends as a forked run's
        does (:func:`ironhive.process_lifecycle.end_process`), and its start runs with the garbage collector paused
        (:func:`ironhive.process_lifecycle.pause_collection`).
    """
    args, no_daemon = strip_no_daemon(args)
    if no_daemon:
        os.environ[ENVIRONMENT_VARIABLE] = "0"  # the run's resident local-model worker follows the flag too
    if not hasattr(_socket, "SO_PEERCRED") or not hasattr(os, "pidfd_open"):
        return _run_direct(direct, args)  # Linux only: the peer check and the server's child watch need it
    try:
        stdin_is_terminal = os.isatty(0)
    except OSError:
        stdin_is_terminal = False
    if not is_warm_command(args, stdin_is_terminal):
        return _run_direct(direct, args)
    home = os.environ.get("HOME") or os.path.expanduser("~")
    decision = decide(os.environ, home, no_daemon_flag=no_daemon)
    if decision.enabled:
        code = _try_warm(args, decision, home)
        if code is not None:
            return code
    from ironhive.process_lifecycle import end_process, pause_collection

    pause_collection()
    code = _run_direct(direct, args)
    if decision.refresh:
        enabled, _ = refresh(home)
        if enabled is False:
            stop_server(runtime_directory(os.environ, home, os.getuid()))
    end_process(code)


def _run_direct(direct: Callable[[list[str]], int], args: list[str]) -> int:
    """Run here, as the CLI: libraries' optional bridges to packages nothing has imported stay out (see
    :mod:`ironhive.lean_imports`)."""
    from ironhive.lean_imports import hide_unused_bridges

    hide_unused_bridges()
    return direct(args)


def _try_warm(args: list[str], decision: Decision, home: str) -> int | None:
    """The exit code of the run made by the warm process, or ``None`` when it did not start (then run direct)."""
    uid = os.getuid()
    directory = runtime_directory(os.environ, home, uid)
    try:
        check_private_directory(directory, uid)
    except FileNotFoundError:
        start_server(directory, decision.idle_seconds)
        return None
    except OSError:
        return None  # never talk through a directory others could enter; `ironhive daemon status` says why
    sock = connect(directory, uid)
    if sock is None:
        start_server(directory, decision.idle_seconds)
        return None
    try:
        reply = _request_run(sock, args, decision.idle_seconds)
        status = reply.get("status")
        if status == "started":
            return _relay(sock, int(reply["pid"]))
    except OSError:
        return None  # nothing was started: the run goes direct
    finally:
        sock.close()
    if status == "stale":
        start_server(directory, decision.idle_seconds)
    return None


def connect(directory: str, uid: int) -> _socket.socket | None:
    """A connection to the warm process of ``directory`` run by ``uid``, or ``None``."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(socket_path(directory))
        if peer_uid(sock) == uid:
            return sock
    except OSError:
        pass
    sock.close()
    return None


def _request_run(sock: _socket.socket, args: list[str], idle_seconds: float) -> Message:
    from ironhive import __version__

    names: list[str] = []
    fds: list[int] = []
    for fd, name in enumerate(STD_STREAMS):
        try:
            os.fstat(fd)
        except OSError:
            continue
        names.append(name)
        fds.append(fd)
    cwd_fd = -1
    try:
        cwd_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        names.append("cwd")
        fds.append(cwd_fd)
    except OSError:
        pass
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    umask = os.umask(0o077)
    os.umask(umask)
    ignored = [number for number in (*RELAYED, _signal.SIGTSTP) if _signal.getsignal(number) == _signal.SIG_IGN]
    message = {
        "op": "run",
        "fingerprint": install_fingerprint(__version__),
        "compat": compatibility_key(os.environ),
        "argv0": sys.argv[0] if sys.argv else "ironhive",
        "args": list(args),
        "cwd": cwd,
        "env": dict(os.environ),
        "umask": umask,
        "ignored": ignored,
        "idle": idle_seconds,
        "fds": names,
    }
    try:
        send(sock, message, fds)
    finally:
        if cwd_fd >= 0:
            os.close(cwd_fd)
    return receive(sock)


def _relay(sock: _socket.socket, pid: int) -> int:
    """Relay signals to the child until the server reports its end; exit as it did."""

    def forward(number: int, _frame: object) -> None:
        try:  # noqa: SIM105 - contextlib costs the client milliseconds
            send(sock, {"signal": number, "group": number in TERMINAL_SIGNALS})
        except OSError:
            pass

    def suspend(number: int, _frame: object) -> None:
        forward(number, None)
        _signal.signal(_signal.SIGTSTP, _signal.SIG_DFL)
        os.kill(os.getpid(), _signal.SIGTSTP)  # stops here until the shell continues us
        _signal.signal(_signal.SIGTSTP, suspend)
        forward(_signal.SIGCONT, None)

    for number in RELAYED:
        if _signal.getsignal(number) != _signal.SIG_IGN:
            _signal.signal(number, forward)
    if _signal.getsignal(_signal.SIGTSTP) != _signal.SIG_IGN:
        _signal.signal(_signal.SIGTSTP, suspend)
    try:
        reply = receive(sock)
    except OSError:  # the run started: it is never repeated
        return _server_lost(pid)
    if reply.get("status") == "signaled":
        ended_by = int(reply["signal"])
        _signal.signal(ended_by, _signal.SIG_DFL)
        os.kill(os.getpid(), ended_by)
        return 128 + ended_by
    return int(reply.get("code", 1))


def _server_lost(pid: int) -> int:
    """The warm process ended during the run: wait for the child, then report it (the run is never repeated)."""
    import time

    while _alive(pid):
        time.sleep(0.05)
    os.write(2, b"Error: the ironhive warm process ended during the run; its exit code is unknown.\n")
    return 1


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stream:
            return stream.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def start_server(directory: str, idle_seconds: float) -> None:
    """Start the warm process in the background (double fork, new session, stdio on /dev/null, no other fds).

    Nothing happens when the directory cannot be made private or a server holds (or is taking) the lock.
    """
    import fcntl

    if not sys.argv or os.path.dirname(os.path.realpath(sys.argv[0])) != os.path.realpath(sys.path[0] or "."):
        return  # not the console script (``python -m ironhive`` puts the working directory on sys.path): no server
    uid = os.getuid()
    try:
        ensure_private_directory(directory, uid)
        lock = os.open(os.path.join(directory, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except (OSError, UnsafeDirectoryError):
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # a server is running or starting
    finally:
        os.close(lock)
    environment = {
        name: value
        for name, value in os.environ.items()
        if name in SERVER_ENVIRONMENT or name in compatibility_key(os.environ)["variables"]
    }
    code = (
        f"import sys; sys.path[:] = {sys.path!r}; from ironhive.daemon.server import main; "
        f"main({directory!r}, {float(idle_seconds)!r})"
    )
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked process
        try:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for target in (0, 1, 2):
                    os.dup2(null, target)
                os.closerange(3, os.sysconf("SC_OPEN_MAX"))
                os.chdir("/")
                os.execve(sys.executable, [sys.executable, "-c", code], environment)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def stop_server(directory: str) -> bool:
    """Ask the warm process of ``directory`` to stop (it finishes running runs first); whether one was running."""
    sock = connect(directory, os.getuid())
    if sock is None:
        return False
    try:
        send(sock, {"op": "stop"})
        receive(sock)
    except OSError:
        return False
    finally:
        sock.close()
    return True
