"""The approval gate: planning-mode enforcement, then the permission verdict (allow, deny, or ask a human)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from ironhive.domain.invocation.approval_scope import RememberedScopes, approval_scope
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
MAX_ASKS = 3
"""How often one call is put to the human: each approval that changes the arguments into a call the rules still ask
about is asked again, up to this many questions in all."""
TOO_MANY_CHANGES = f"the arguments were changed {MAX_ASKS} times and the changed call still needs approval"


class ToolCallJudge(Protocol):
    """Judges a tool call by the permission rules."""

    def evaluate(self, tool_name: str, arguments: Mapping[str, JsonValue]) -> Verdict:
        """The verdict for one call."""
        ...


class ApprovalGateMiddleware:
    """Lets a call run only when the mode and the permission rules allow it, or a human approves it.

    Order: (1) in planning mode only read-only tools run; (2) the verdict: allow runs the call, deny refuses it, ask
    puts it to the approval service. Arguments the human changes are judged again, as if the model had sent them: a
    deny stays a deny and an ask is asked again (at most :data:`MAX_ASKS` questions per call). "Always approve"
    remembers the scope the request showed (the tool plus its command prefixes or exact paths, see
    :mod:`ironhive.domain.invocation.approval_scope`) for the rest of the session, never the whole tool.
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
        self._remembered = RememberedScopes()

    @property
    def remembered(self) -> RememberedScopes:
        """The scopes approved "always" so far."""
        return self._remembered

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        """Run, refuse, or ask about one call."""
        name = invocation.call.name
        if self._mode() is Mode.PLANNING and not is_read_only_tool(name, self._read_only_tools):
            return ToolOutcome(result=PLANNING_REFUSAL + name, success=False)
        arguments = invocation.arguments
        for asked in range(MAX_ASKS + 1):
            verdict = self._judge.evaluate(name, arguments)
            if verdict.action is PermissionAction.DENY:
                return ToolOutcome(result=DENIED + (verdict.reason or "Tool execution not allowed"), success=False)
            if verdict.action is PermissionAction.ALLOW or self._remembered.covers(name, arguments, verdict.reason):
                break
            if asked == MAX_ASKS:
                return ToolOutcome(result=REJECTED + TOO_MANY_CHANGES, success=False)
            if self._approval is None:
                return ToolOutcome(result=NO_APPROVER + (verdict.reason or name), success=False)
            scope = approval_scope(name, arguments, verdict.reason)
            decision = await self._approval.request_approval(
                ApprovalRequest(
                    tool_name=name,
                    arguments=arguments,
                    call_id=invocation.call.call_id,
                    level=verdict.level,
                    reason=verdict.reason or f"Tool: {name}",
                    prompt=verdict.prompt or "Allow this operation?",
                    scope=None if scope is None else scope.describe(),
                )
            )
            if not decision.approved:
                reason = decision.reason or DEFAULT_REJECTION_REASON
                return ToolOutcome(result=REJECTED + reason, success=False, terminate=decision.stop)
            if decision.always_approve and scope is not None:
                self._remembered.remember(scope)  # what the human saw, not what the changed arguments would give
            changed = {**arguments, **decision.modified_arguments} if decision.modified_arguments else arguments
            if changed == arguments:
                break  # approved as shown
            arguments = changed  # a new call: judged again from the top
        invocation.arguments = arguments
        return await next_step(invocation)
