"""ConsoleTrustDecider: asks only where stdin and stdout are terminals, and anything but yes or always is a no."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ironhive.adapters.mcp.console_trust import ConsoleTrustDecider
from ironhive.adapters.mcp.trust import TrustDecision, TrustRequest


class Terminal(io.StringIO):
    """A text stream that says it is a terminal (or not)."""

    def __init__(self, text: str = "", *, tty: bool = True) -> None:
        super().__init__(text)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


REQUEST = TrustRequest(
    path=Path("/project/.ironhive/plugins.yaml"),
    sha256="ab" * 32,
    commands=("time: uvx mcp-server-time",),
    changed=True,
)


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        ("a\n", TrustDecision.ALWAYS),
        ("always\n", TrustDecision.ALWAYS),
        ("Y\n", TrustDecision.ONCE),
        ("yes\n", TrustDecision.ONCE),
        ("n\n", TrustDecision.DENY),
        ("\n", TrustDecision.DENY),
        ("", TrustDecision.DENY),  # end of input
        ("sure\n", TrustDecision.DENY),
    ],
)
async def test_the_answer_on_a_terminal_decides(answer: str, decision: TrustDecision) -> None:
    stderr = io.StringIO()
    decider = ConsoleTrustDecider(stdin=Terminal(answer), stdout=Terminal(), stderr=stderr)
    assert await decider.decide(REQUEST) == decision
    asked = stderr.getvalue()
    assert "/project/.ironhive/plugins.yaml (it changed since you trusted it)" in asked
    assert "    time: uvx mcp-server-time" in asked


@pytest.mark.parametrize(("stdin_tty", "stdout_tty"), [(False, True), (True, False), (False, False)])
async def test_without_two_terminals_it_denies_without_asking(stdin_tty: bool, stdout_tty: bool) -> None:
    stderr = io.StringIO()
    decider = ConsoleTrustDecider(stdin=Terminal("a\n", tty=stdin_tty), stdout=Terminal(tty=stdout_tty), stderr=stderr)
    assert await decider.decide(REQUEST) == TrustDecision.DENY
    assert stderr.getvalue() == ""
