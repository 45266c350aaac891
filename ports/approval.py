"""The ApprovalService port: asks a human whether a tool call may run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from ironhive.ports.chat import JsonValue


class RiskLevel(StrEnum):
    """How much harm a call could do."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalRequest:
    """A tool call waiting for a human's decision.

    Attributes:
        tool_name: The tool the model wants to call.
        arguments: The call's arguments.
        call_id: The model's id for the call.
        level: The risk of the call.
        reason: Why the call needs approval (the matched rule's reason or a description of the call).
        prompt: The question put to the human.
        scope: What an "always approve" answer would cover (``execute_command: echo *``), shown to the human;
            ``None`` when "always" is not available for this call (it is then asked every time).
    """

    tool_name: str
    arguments: Mapping[str, JsonValue]
    call_id: str
    level: RiskLevel
    reason: str
    prompt: str
    scope: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalDecision:
    """A human's answer to an approval request.

    Attributes:
        approved: Whether the call may run.
        reason: Why it was rejected (shown to the model), when it was.
        modified_arguments: Argument values the human changed; they replace the model's values key by key, and the
            changed call is judged by the rules again (a deny stays a deny, an ask is asked again).
        always_approve: Approve later calls inside the request's ``scope`` without asking, for the rest of the
            session (never the whole tool, unless the rules judge the tool by name alone).
        stop: Stop the whole request after this rejection.
    """

    approved: bool
    reason: str | None = None
    modified_arguments: Mapping[str, JsonValue] | None = None
    always_approve: bool = False
    stop: bool = False


@runtime_checkable
class ApprovalService(Protocol):
    """Asks a human (on a console, over the wire, ...) to approve a tool call."""

    async def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask for a decision; a service that cannot ask must reject, never approve.

        Args:
            request: The call waiting for approval.

        Returns:
            The decision.
        """
        ...
