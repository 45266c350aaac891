"""The approval gate: planning-mode enforcement, then the permission verdict (allow, deny, or ask a human)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from ironhive.domain.invocation.pipeline import NextStep, ToolInvocation, ToolOutcome
from ironhive.domain.permissions.modes import Mode, is_read_only_tool
from ironhive.domain.permissions.rules import PermissionAction
from ironhive.domain.permissions.verdict import Verdict
from ironhive.ports.approval import ApprovalRequest, ApprovalService
from ironhive.ports.chat import JsonValue

DENIED = "Permission denied: "
REJECTED = "Approval rejected: "
NO_APPROVER = "Approval required but no approval service is configured: "
PLANNING_REFUSAL = "Planning mode permits read-only tools only: "
DEFAULT_REJECTION_REASON = "the operator declined"


class ToolCallJudge(Protocol):
    """Judges a tool call by the permission rules."""

    def evaluate(self, tool_name: str, arguments: Mapping[str, JsonValue]) -> Verdict:
        """The verdict for one call."""
        ...


class ApprovalGateMiddleware:
    """Lets a call run only when the mode and the permission rules allow it, or a human approves it.

    Order: (1) in planning mode only read-only tools run; (2) the verdict: allow runs the call, deny refuses it, ask
    puts it to the approval service. "Always approve" answers are remembered per tool for the rest of the session.
    """

    def __init__(
        self,
        judge: ToolCallJudge,
        approval: ApprovalService | None,
        *,
        mode: Callable[[], Mode] = lambda: Mode.WORKING,
        read_only_tools: tuple[str, ...] = (),
    ) -> None:
        self._judge = judge
        self._approval = approval
        self._mode = mode
        self._read_only_tools = read_only_tools
        self._always_approved: set[str] = set()

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        """Run, refuse, or ask about one call."""
        name = invocation.call.name
        if self._mode() is Mode.PLANNING and not is_read_only_tool(name, self._read_only_tools):
            return ToolOutcome(result=PLANNING_REFUSAL + name, success=False)
        verdict = self._judge.evaluate(name, invocation.arguments)
        if verdict.action is PermissionAction.ALLOW or (
            verdict.action is PermissionAction.ASK and name in self._always_approved
        ):
            return await next_step(invocation)
        if verdict.action is PermissionAction.DENY:
            return ToolOutcome(result=DENIED + (verdict.reason or "Tool execution not allowed"), success=False)
        if self._approval is None:
            return ToolOutcome(result=NO_APPROVER + (verdict.reason or name), success=False)
        decision = await self._approval.request_approval(
            ApprovalRequest(
                tool_name=name,
                arguments=invocation.arguments,
                call_id=invocation.call.call_id,
                level=verdict.level,
                reason=verdict.reason or f"Tool: {name}",
                prompt=verdict.prompt or "Allow this operation?",
            )
        )
        if not decision.approved:
            reason = decision.reason or DEFAULT_REJECTION_REASON
            return ToolOutcome(result=REJECTED + reason, success=False, terminate=decision.stop)
        if decision.always_approve:
            self._always_approved.add(name)
        if decision.modified_arguments:
            invocation.arguments = {**invocation.arguments, **decision.modified_arguments}
        return await next_step(invocation)
