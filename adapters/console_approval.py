"""ConsoleApprovalService: asks on the terminal; without one (stdin or stdout redirected) it rejects instead."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Mapping
from typing import Protocol, TextIO

from ironhive.ports.approval import ApprovalDecision, ApprovalRequest
from ironhive.ports.chat import JsonValue

SUMMARY_KEYS = ("command", "path", "file_path", "pattern", "url", "query")
"""The argument that says most about a call, in order of preference; else the first text argument."""


class ApprovalConsole(Protocol):
    """Where the approval menu is shown and answered."""

    def show(self, text: str) -> None:
        """Show the lines that describe the call (before the question)."""
        ...

    async def ask(self, question: str, default: str = "") -> str | None:
        """Put one question and return the answer line, or ``None`` when the input ended."""
        ...


class StreamConsole:
    """The menu on stderr, the answer read as a line from stdin (in a thread, so the event loop goes on)."""

    def __init__(self, stdin: TextIO, stderr: TextIO) -> None:
        self._stdin = stdin
        self._stderr = stderr

    def show(self, text: str) -> None:
        """Write the text on stderr."""
        self._stderr.write(text)
        self._stderr.flush()

    async def ask(self, question: str, default: str = "") -> str | None:
        """Write the question (and the value to change, when there is one) and read one line."""
        if default:
            self.show(f"  now: {default}\n")
        self.show(question)
        answer = await asyncio.to_thread(self._stdin.readline)
        return answer or None


def summary(arguments: Mapping[str, JsonValue], limit: int = 60) -> str:
    """The call in a few words: its command, path or first text argument, on one line."""
    texts = [(key, value) for key, value in arguments.items() if isinstance(value, str) and value.strip()]
    preferred = [value for key in SUMMARY_KEYS for name, value in texts if name == key]
    chosen = (preferred or [value for _, value in texts] or [""])[0]
    line = " ⏎ ".join(part.strip() for part in chosen.strip().splitlines())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def menu(request: ApprovalRequest) -> tuple[str, str]:
    """The lines describing the call and the question line offering the answers."""
    arguments = json.dumps(request.arguments, ensure_ascii=False)
    always = f"  [a]lways approves {request.scope} for this session\n" if request.scope is not None else ""
    described = f"\n[{request.level.value}] {request.reason}\n  {request.tool_name} {arguments[:500]}\n{always}"
    about = summary(request.arguments)
    call = f"{request.tool_name} `{about}`" if about else request.tool_name
    always_option = "[a]lways / " if request.scope is not None else ""
    options = f"[y]es / {always_option}[n]o / [e]dit / [s]top"
    return described, f"Allow {call}? {options}: "


def decide(answer: str, request: ApprovalRequest) -> ApprovalDecision | str | None:
    """The decision an answer stands for, ``"edit"`` for an edit, or ``None`` when it is not one of the answers."""
    choice = answer.strip().lower()
    if choice in {"y", "yes"}:
        return ApprovalDecision(approved=True)
    if choice in {"a", "always"} and request.scope is not None:
        return ApprovalDecision(approved=True, always_approve=True)
    if choice in {"n", "no"}:
        return ApprovalDecision(approved=False, reason="User rejected")
    if choice in {"s", "stop"}:
        return ApprovalDecision(approved=False, reason="User rejected and stopped", stop=True)
    if choice in {"e", "edit"}:
        return "edit"
    return None


def edited_arguments(text: str) -> dict[str, JsonValue]:
    """The arguments a human typed: a JSON object.

    Raises:
        ValueError: The text is not a JSON object.
    """
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("the arguments must be a JSON object ({...})")
    return value


class ConsoleApprovalService:
    """The ApprovalService of an interactive terminal.

    The menu is shown only when both stdin and stdout are terminals: a prompt must never land in an output stream
    or wait on a pipe. Otherwise every request is rejected. The question names the call (``Allow execute_command
    `ls`? [y]es / [a]lways / [n]o / [e]dit / [s]top``); "always" is offered only for a request with a ``scope``, and
    the menu names that scope, so the human sees what a yes would cover for the rest of the session. "Edit" asks for
    the arguments as a JSON object (the current ones to start from) and approves the call with them; the changed call
    is judged by the rules again. By default the menu is written on stderr and answered on stdin; the interactive
    mode passes its line editor as ``console``.
    """

    def __init__(
        self,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        is_interactive: Callable[[], bool] | None = None,
        console: ApprovalConsole | None = None,
    ) -> None:
        self._stdin = stdin or sys.stdin
        self._stdout = stdout or sys.stdout
        self._console = console or StreamConsole(self._stdin, stderr or sys.stderr)
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
        described, question = menu(request)
        self._console.show(described)
        letters = "y, a, n, e or s" if request.scope is not None else "y, n, e or s"
        while True:
            answer = await self._console.ask(question)
            if answer is None:  # the terminal closed: never a pass
                return ApprovalDecision(approved=False, reason="User rejected")
            decision = decide(answer, request)
            if isinstance(decision, ApprovalDecision):
                return decision
            if decision == "edit":
                edited = await self._edit(request)
                if edited is not None:
                    return edited
                continue
            self._console.show(f"Answer {letters}.\n")

    async def _edit(self, request: ApprovalRequest) -> ApprovalDecision | None:
        """Approval with the arguments the human typed; ``None`` (back to the menu) for an empty or broken answer."""
        current = json.dumps(request.arguments, ensure_ascii=False)
        text = await self._console.ask("Arguments (JSON; empty to go back): ", current)
        if text is None or not text.strip():
            return None
        try:
            arguments = edited_arguments(text)
        except ValueError as error:
            self._console.show(f"Not changed: {error}.\n")
            return None
        return ApprovalDecision(approved=True, modified_arguments=arguments)
