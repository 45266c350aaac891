"""ConsoleTrustDecider: asks on the terminal whether a project plugin file may start its processes."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from ironhive.adapters.mcp.trust import TrustDecision, TrustRequest


class ConsoleTrustDecider:
    """Asks on stderr/stdin when both stdin and stdout are terminals; otherwise denies (never a silent pass).

    Every one-shot builds one; only a run with a project plugin file asks it, so the trust module loads then.
    """

    def __init__(self, *, stdin: TextIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None):
        self._stdin = stdin or sys.stdin
        self._stdout = stdout or sys.stdout
        self._stderr = stderr or sys.stderr

    async def decide(self, request: TrustRequest) -> TrustDecision:
        """Ask about one plugin file."""
        from ironhive.adapters.mcp.trust import TrustDecision

        if not (self._stdin.isatty() and self._stdout.isatty()):
            return TrustDecision.DENY
        return await asyncio.to_thread(self._ask, request)

    def _ask(self, request: TrustRequest) -> TrustDecision:
        from ironhive.adapters.mcp.trust import TrustDecision

        changed = " (it changed since you trusted it)" if request.changed else ""
        commands = "\n".join(f"    {line}" for line in request.commands)
        self._stderr.write(
            f"\nThe project plugin file {request.path}{changed} wants to start:\n{commands}\n"
            "Run these MCP servers? [y] once  [a] always (remember this file content)  [N] no: "
        )
        self._stderr.flush()
        answer = self._stdin.readline().strip().lower()
        if answer in {"a", "always"}:
            return TrustDecision.ALWAYS
        if answer in {"y", "yes"}:
            return TrustDecision.ONCE
        return TrustDecision.DENY
