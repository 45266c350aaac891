"""ConsoleApprovalService: the "always" option names the request's scope, and is not offered without one."""

from __future__ import annotations

import io

from ironhive.adapters.console_approval import ConsoleApprovalService
from ironhive.ports.approval import ApprovalDecision, ApprovalRequest, RiskLevel


def request(scope: str | None) -> ApprovalRequest:
    return ApprovalRequest(
        tool_name="execute_command",
        arguments={"command": "echo hi"},
        call_id="c1",
        level=RiskLevel.MEDIUM,
        reason="Shell command: echo hi",
        prompt="Allow executing this command?",
        scope=scope,
    )


async def ask(scope: str | None, answers: str) -> tuple[ApprovalDecision, str]:
    stderr = io.StringIO()
    console = ConsoleApprovalService(stdin=io.StringIO(answers), stderr=stderr, is_interactive=lambda: True)
    decision = await console.request_approval(request(scope))
    return decision, stderr.getvalue()


async def test_always_names_the_scope_it_would_cover() -> None:
    decision, shown = await ask("execute_command: echo *", "a\n")
    assert decision == ApprovalDecision(approved=True, always_approve=True)
    assert "  [a] always approve execute_command: echo * for this session\n" in shown


async def test_without_a_scope_always_is_not_offered_nor_taken() -> None:
    decision, shown = await ask(None, "a\ny\n")
    assert decision == ApprovalDecision(approved=True)  # "a" was refused, "y" approved once
    assert "[a]" not in shown
    assert "Answer y, n or s." in shown
