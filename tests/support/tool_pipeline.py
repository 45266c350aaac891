"""The built-in tools behind the agent's own gate: a ToolCallPolicy, the approval gate and a scripted approver."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ironhive.adapters.permissions.gitignore_matcher import GitIgnorePathMatcher
from ironhive.adapters.tools.provider import BuiltInToolProvider, PolicyReadRules
from ironhive.domain.invocation.gate import ApprovalGateMiddleware
from ironhive.domain.invocation.pipeline import ToolInvocation, ToolInvocationPipeline, ToolMiddleware, ToolOutcome
from ironhive.domain.permissions.policy import ToolCallPolicy
from ironhive.domain.permissions.rules import PermissionAction, PermissionPolicy, PermissionRule
from ironhive.ports.approval import ApprovalDecision, ApprovalRequest
from ironhive.ports.chat import JsonValue, ToolCallPart
from ironhive.ports.tools import Tool


def _rule(pattern: str, action: PermissionAction, priority: int = 0) -> PermissionRule:
    return PermissionRule(pattern=pattern, action=action, priority=priority)


ALLOW, ASK, DENY = PermissionAction.ALLOW, PermissionAction.ASK, PermissionAction.DENY

POLICY = PermissionPolicy(
    read=(_rule("**/*", ALLOW), _rule(".env*", ASK, 10), _rule("**/.env*", ASK, 10), _rule("**/secrets/**", DENY, 20)),
    edit=(_rule("**/*", ALLOW), _rule("**/secrets/**", DENY, 20)),
    tools=(_rule("*", ALLOW),),
    ask_before_delete=False,
    default_action=ASK,
)
"""Everything inside the working directory may be read and changed without asking, except ``.env`` (asked) and
``secrets/`` (denied); nothing outside is allowed (``external_directory`` is empty, so it is asked)."""


class ScriptedApprover:
    """Answers every approval request the same way and records the requests."""

    def __init__(self, *, approve: bool) -> None:
        self.approve = approve
        self.requests: list[ApprovalRequest] = []

    async def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(approved=self.approve, reason=None if self.approve else "rejected by the test")


class AgentTools:
    """The built-in tools of one working directory, each call judged and gated as the agent does it.

    Args:
        root: The working directory.
        policy: The rules.
        approve: Whether asked calls are approved (rejected by default, so only allowed calls run).
        inner: Middleware run after the gate, right before the tool (a test may change the disk there).
    """

    def __init__(
        self,
        root: Path,
        policy: PermissionPolicy = POLICY,
        *,
        approve: bool = False,
        inner: tuple[ToolMiddleware, ...] = (),
    ) -> None:
        self.judge = ToolCallPolicy(policy, root, GitIgnorePathMatcher())
        self.approver = ScriptedApprover(approve=approve)
        self._provider = BuiltInToolProvider(root, read_rules=PolicyReadRules(self.judge))
        self._pipeline = ToolInvocationPipeline([ApprovalGateMiddleware(self.judge, self.approver), *inner])
        self._count = 0

    async def call(self, name: str, arguments: Mapping[str, JsonValue]) -> ToolOutcome:
        """Run one call through the gate to the tool; a refusal or tool error is a failed outcome."""
        tools: dict[str, Tool] = {tool.spec.name: tool for tool in await self._provider.get_tools()}
        self._count += 1
        call = ToolCallPart(call_id=f"call_{self._count}", name=name, arguments=dict(arguments))
        return await self._pipeline.invoke(ToolInvocation(call=call, tool=tools[name], arguments=arguments))
