"""The ``ironhive daemon status|stop`` command: see and stop this user's warm process."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated, Literal

from cyclopts import App, Parameter


def register(app: App) -> None:
    """Add the ``daemon`` command to ``app``."""
    app.command(daemon, name="daemon")


def daemon(
    action: Annotated[
        Literal["status", "stop"], Parameter(name="ACTION", help="status (default): whether it runs; stop: end it.")
    ] = "status",
    /,
) -> int:
    """The warm process non-interactive runs fork from (IRONHIVE_DAEMON=0, daemon.enabled: false or --no-daemon: never).

    ``status`` exits 0 when it runs, 1 when not; ``stop`` lets running runs finish first.
    """
    from ironhive.daemon.client import connect, stop_server
    from ironhive.daemon.paths import UnsafeDirectoryError, check_private_directory, runtime_directory
    from ironhive.daemon.protocol import receive, send
    from ironhive.daemon.settings import decide

    home = str(Path.home())
    directory = runtime_directory(os.environ, home, os.getuid())
    if action == "stop":
        from ironhive.adapters.llamacpp.resident import stop_all

        if residents := stop_all(Path(directory)):  # the local model's resident workers live in the same folder
            sys.stdout.write(f"Asked {residents} resident local model worker(s) to exit.\n")
        if not stop_server(directory):
            sys.stdout.write("The ironhive daemon is not running.\n")
            return 0
        deadline = time.monotonic() + 10
        while os.path.exists(os.path.join(directory, "ironhive.sock")) and time.monotonic() < deadline:
            time.sleep(0.05)
        sys.stdout.write("The ironhive daemon stopped.\n")
        return 0
    decision = decide(os.environ, home)
    use = "used" if decision.enabled else "not used"
    sys.stdout.write(f"Runs: {use} ({decision.reason}); idle timeout {decision.idle_seconds:g} s.\n")
    try:
        check_private_directory(directory, os.getuid())
    except UnsafeDirectoryError as error:
        sys.stdout.write(f"The ironhive daemon is refused: {error}.\n")
        return 1
    except OSError:
        pass
    sock = connect(directory, os.getuid())
    if sock is None:
        sys.stdout.write(f"The ironhive daemon is not running (socket directory {directory}).\n")
        return 1
    try:
        send(sock, {"op": "status"})
        status = receive(sock)
    except OSError:
        sys.stdout.write("The ironhive daemon did not answer.\n")
        return 1
    finally:
        sock.close()
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(status["started"])))
    sys.stdout.write(
        f"The ironhive daemon is running: pid {status['pid']}, version {status['version']}, since {since}, "
        f"{status['served']} runs served, {status['active']} running, idle timeout {float(status['idle']):g} s, "
        f"socket {status['socket']}.\n"
    )
    return 0
