"""``ironhive acp``: serve ironhive to an editor over the Agent Client Protocol (JSON-RPC on stdin/stdout).

Only cyclopts is imported at module level: the ACP SDK is imported when the command runs.
"""

from __future__ import annotations

import os
from typing import Annotated

from cyclopts import App, Parameter


def register(app: App) -> None:
    """Add the ``acp`` command to ``app``."""
    app.command(acp_command, name="acp")


def acp_command(
    *,
    model: Annotated[str | None, Parameter(name=["-m", "--model"], help="Model to use (or provider/model).")] = None,
    provider: Annotated[str | None, Parameter(help="Provider to use (default: the configured one).")] = None,
) -> int:
    """Serve ironhive as an ACP agent on stdin/stdout for editors (Zed, JetBrains, Neovim, Emacs).

    Each editor session is an ironhive session of its folder, resumable with session/load.

    Approvals are asked in the editor; its 'plan' mode is planning mode (read-only tools).
    """
    from ironhive.acp.runner import run_acp
    from ironhive.acp.session import SessionOptions

    return run_acp(SessionOptions(provider=provider, model=model, environ=os.environ))
