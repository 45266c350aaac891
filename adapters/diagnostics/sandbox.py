"""Doctor's command sandbox check: whether ``execute_command`` runs in bubblewrap, and what to do when it cannot."""

from __future__ import annotations

from collections.abc import Callable

from ironhive.adapters.config.schema import sandbox_section
from ironhive.adapters.diagnostics.report import ENVIRONMENT, Check
from ironhive.adapters.tools.sandbox import SandboxProbe, probe_bubblewrap
from ironhive.domain.errors import ConfigurationError

NAME = "Command sandbox"

_UNSANDBOXED = "commands run unsandboxed, guarded by the permission rules alone"
_INSTALL_HINT = (
    "Install bubblewrap (Debian/Ubuntu: `sudo apt install bubblewrap`, Fedora: `sudo dnf install bubblewrap`) and "
    "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04+ "
    "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap)."
)


def sandbox_check(
    permissions: object,
    path: str | None,
    *,
    verbose: bool,
    probe: Callable[[str | None], SandboxProbe] = probe_bubblewrap,
) -> Check | None:
    """Whether commands run sandboxed: a warning when they cannot or the sandbox is off, a pass only with ``verbose``.

    Args:
        permissions: The raw ``permissions`` section of config.yaml (its ``sandbox`` key is read).
        path: The ``PATH`` ``bwrap`` is looked up on.
        verbose: Show the pass too, with the ``bwrap`` found.
        probe: Runs ``bwrap`` once (injected by tests).

    Returns:
        The check, or ``None`` for a quiet pass.
    """
    try:
        settings = sandbox_section(permissions)
    except ConfigurationError as error:
        return Check(category=ENVIRONMENT, name=NAME, status="error", message=str(error))
    if not settings.enabled:
        return Check(
            category=ENVIRONMENT,
            name=NAME,
            status="warning",
            message=f"Turned off by permissions.sandbox.enabled: false; {_UNSANDBOXED}",
            hint="Remove the setting to run commands in the sandbox again where it can run.",
        )
    found = probe(path)
    if found.executable is None:
        return Check(
            category=ENVIRONMENT,
            name=NAME,
            status="warning",
            message=f"No sandbox: {found.reason}; {_UNSANDBOXED}",
            hint=_INSTALL_HINT,
        )
    if not verbose:
        return None
    network = "on (permissions.sandbox.network)" if settings.network else "off"
    return Check(
        category=ENVIRONMENT,
        name=NAME,
        status="pass",
        message=f"Commands run in bubblewrap ({found.executable}), network {network}",
    )
