"""ConsoleApprovalService: asks on the terminal; without one (stdin or stdout redirected) it rejects instead."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import TextIO

from ironhive.ports.approval import ApprovalDecision, ApprovalRequest

_ONCE = "  [y] approve once\n"
_REJECT = "  [n] reject\n  [s] reject and stop the request\n"


def _choices(scope: str | None) -> str:
    """The answers offered; "always" only with a scope, and naming exactly what it would cover."""
    if scope is None:
        return _ONCE + _REJECT
    return _ONCE + f"  [a] always approve {scope} for this session\n" + _REJECT


class ConsoleApprovalService:
    """The ApprovalService of an interactive terminal.

    The question is written to stderr and the answer read from stdin, only when both stdin and stdout are terminals:
    a prompt must never land in an output stream or wait on a pipe. Otherwise every request is rejected. "Always" is
    offered only for a request with a ``scope``, and the option names that scope (``execute_command: echo *``): the
    human sees what a yes would cover for the rest of the session.
    """

    def __init__(
        self,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        is_interactive: Callable[[], bool] | None = None,
    ) -> None:
        self._stdin = stdin or sys.stdin
        self._stdout = stdout or sys.stdout
        self._stderr = stderr or sys.stderr
        self._is_interactive = is_interactive or self._both_terminals

    def _both_terminals(self) -> bool:
        return self._stdin.isatty() and self._stdout.isatty()

    async def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask on the terminal, or reject when there is none."""
        if not self._is_interactive():
            return ApprovalDecision(
                approved=False,
                reason=f"'{request.tool_name}' requires approval but there is no interactive console to ask on",
            )
        return await asyncio.to_thread(self._ask, request)

    def _ask(self, request: ApprovalRequest) -> ApprovalDecision:
        arguments = json.dumps(request.arguments, ensure_ascii=False)
        self._stderr.write(
            f"\n[{request.level.value}] {request.reason}\n"
            f"  tool: {request.tool_name}  arguments: {arguments[:500]}\n"
            f"{request.prompt}\n{_choices(request.scope)}"
        )
        letters = "y, a, n or s" if request.scope is not None else "y, n or s"
        while True:
            self._stderr.write("> ")
            self._stderr.flush()
            answer = self._stdin.readline()
            if not answer:  # the terminal closed: never a pass
                return ApprovalDecision(approved=False, reason="User rejected")
            choice = answer.strip().lower()
            if choice in {"y", "yes"}:
                return ApprovalDecision(approved=True)
            if choice in {"a", "always"} and request.scope is not None:
                return ApprovalDecision(approved=True, always_approve=True)
            if choice in {"n", "no"}:
                return ApprovalDecision(approved=False, reason="User rejected")
            if choice in {"s", "stop"}:
                return ApprovalDecision(approved=False, reason="User rejected and stopped", stop=True)
            self._stderr.write(f"Answer {letters}.\n")
