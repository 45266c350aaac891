"""The command sandbox: bubblewrap around ``execute_command``, used where a real probe shows that it can run."""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PROTECTED_HOME_ENTRIES = (
    ".ironhive",
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".gnupg",
    ".password-store",
    ".local/share/keyrings",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
)
"""Entries of the home directory a sandboxed command cannot see: keys, tokens and the user's ironhive settings."""

PROTECTED_SOCKETS = ("/run/docker.sock", "/var/run/docker.sock")
"""Sockets that grant more than a read-only file system does (a read-only mount does not stop ``connect``)."""

_PROBE_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, kw_only=True, slots=True)
class SandboxSettings:
    """The ``permissions.sandbox`` section of config.yaml.

    Attributes:
        enabled: Run commands in the sandbox where one can run (``False``: always run them as they are).
        network: Let sandboxed commands use the network (off: they see only their own loopback).
    """

    enabled: bool = True
    network: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class SandboxProbe:
    """What the probe found: the ``bwrap`` that ran, or why no sandbox can run.

    Attributes:
        executable: The ``bwrap`` binary that ran the probe command, or ``None``.
        reason: Why no sandbox can run (empty when one can).
    """

    executable: str | None
    reason: str = ""

    @property
    def available(self) -> bool:
        """Whether commands can run sandboxed."""
        return self.executable is not None


Probe = Callable[[], SandboxProbe]
"""Decides whether the sandbox can run (injected by tests; the default runs ``bwrap`` once per process)."""


def isolation_arguments(*, network: bool) -> list[str]:
    """The bwrap options every sandboxed command gets, the probe's included, so the probe tests what runs.

    A private PID namespace whose first process dies with ironhive's child takes every process of the command along,
    ``setsid`` daemons included. Capabilities are dropped because bwrap run by root keeps them otherwise, and with
    ``CAP_SYS_ADMIN`` a command could unmount the covers over the protected folders.
    """
    arguments = [
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--perms", "1777", "--tmpfs", "/tmp",
        "--perms", "1777", "--tmpfs", "/var/tmp",
        "--perms", "1777", "--tmpfs", "/dev/shm",
        "--unshare-user-try",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--cap-drop", "ALL",
    ]  # fmt: skip
    if not network:
        arguments.append("--unshare-net")
    return arguments


def probe_bubblewrap(path: str | None = None) -> SandboxProbe:
    """Run ``bwrap`` once with the sandbox's own options: the only reliable test of user namespaces and mounts.

    Args:
        path: The ``PATH`` to find ``bwrap`` on (the process's when ``None``).

    Returns:
        The ``bwrap`` that ran, or the reason none can.
    """
    if not sys.platform.startswith("linux"):
        return SandboxProbe(executable=None, reason=f"no command sandbox on {sys.platform} (bubblewrap is Linux-only)")
    found = shutil.which("bwrap", path=path)
    if found is None:
        return SandboxProbe(executable=None, reason="bubblewrap (bwrap) is not installed")
    try:
        completed = subprocess.run(
            [found, *isolation_arguments(network=False), "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return SandboxProbe(executable=None, reason=f"{found} cannot run: {error}")
    if completed.returncode != 0:
        lines = completed.stderr.decode("utf-8", errors="replace").strip().splitlines()
        detail = lines[-1] if lines else f"exit code {completed.returncode}"
        return SandboxProbe(executable=None, reason=f"{found} cannot create the sandbox: {detail}")
    return SandboxProbe(executable=found)


@functools.cache
def cached_probe(path: str | None = None) -> SandboxProbe:
    """:func:`probe_bubblewrap`, run at most once per process for each ``PATH``."""
    return probe_bubblewrap(path)


def _default_probe() -> SandboxProbe:
    return cached_probe(os.environ.get("PATH"))


class CommandSandbox:
    """Decides once whether commands run in bubblewrap, and wraps their command lines.

    In the sandbox the whole file system is read-only except the working directory and private ``/tmp``,
    ``/var/tmp`` and ``/dev/shm``; the entries of :data:`PROTECTED_HOME_ENTRIES` are hidden (an empty folder or file
    over each), and so are the user's runtime folder (agent, keyring and D-Bus sockets) and the Docker socket. Without
    ``network`` the command has its own network namespace with nothing but loopback.

    Args:
        settings: The ``permissions.sandbox`` section.
        home: The home directory whose secrets are hidden (the user's when omitted).
        environ: The environment the commands inherit (``os.environ`` when omitted), for ``XDG_RUNTIME_DIR``.
        probe: Decides whether bwrap can run (run once per process by default).
    """

    def __init__(
        self,
        settings: SandboxSettings | None = None,
        *,
        home: Path | None = None,
        environ: Mapping[str, str] | None = None,
        probe: Probe = _default_probe,
    ) -> None:
        self._settings = settings if settings is not None else SandboxSettings()
        self._home = home
        self._environ = environ
        self._probe = probe
        self._decision: SandboxProbe | None = None

    @property
    def settings(self) -> SandboxSettings:
        """The section the sandbox was built from."""
        return self._settings

    def decide(self) -> SandboxProbe:
        """Whether commands run sandboxed (``None`` executable: they run as they are), probing at the first call.

        A sandbox turned off in the settings is never probed.
        """
        if self._decision is None:
            if not self._settings.enabled:
                self._decision = SandboxProbe(executable=None, reason="turned off by permissions.sandbox.enabled")
            else:
                self._decision = self._probe()
        return self._decision

    async def command_line(self, argv: Sequence[str], cwd: Path) -> list[str]:
        """The command line that runs ``argv`` in ``cwd``: wrapped in bwrap where it can run, else unchanged.

        The probe, a short blocking subprocess, runs off the event loop.
        """
        decision = self._decision if self._decision is not None else await asyncio.to_thread(self.decide)
        if decision.executable is None:
            return list(argv)
        return [decision.executable, *self.arguments(cwd), "--", *argv]

    def arguments(self, cwd: Path) -> list[str]:
        """The bwrap options for a command that runs in ``cwd`` (the binary and the command itself not included)."""
        environ = self._environ if self._environ is not None else os.environ
        home = self._home if self._home is not None else Path(os.path.expanduser("~"))
        cwd = cwd.resolve()
        arguments = isolation_arguments(network=self._settings.network)
        arguments += ["--bind", str(cwd), str(cwd)]
        # The covers come after the working directory's bind, so they also hide what lies inside it (a home as cwd).
        covers = [home / entry for entry in PROTECTED_HOME_ENTRIES]
        runtime = environ.get("XDG_RUNTIME_DIR")
        if runtime:
            covers.append(Path(runtime))
        covers += [Path(socket) for socket in PROTECTED_SOCKETS]
        hidden: set[str] = set()
        for cover in covers:
            options = _cover(cover, cwd)
            if options and options[-1] not in hidden:
                hidden.add(options[-1])
                arguments += options
        if "TMPDIR" in environ:
            arguments += ["--setenv", "TMPDIR", "/tmp"]
        arguments += ["--chdir", str(cwd)]
        return arguments


def _cover(path: Path, cwd: Path) -> list[str]:
    """The options that hide one path: an empty tmpfs over a folder, ``/dev/null`` over anything else."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return []  # nothing there to hide
    if cwd == target or cwd.is_relative_to(target):
        return []  # the user chose to work inside it: hiding it would hide the working directory itself
    if target.is_dir():
        return ["--tmpfs", str(target)]
    # A device bind: bwrap mounts plain binds nodev, where even /dev/null cannot be opened.
    return ["--dev-bind", "/dev/null", str(target)]
