"""Verdict: what the permission engine decided about one tool call, with its risk level, reason and prompt."""

from __future__ import annotations

from dataclasses import dataclass

from ironhive.domain.permissions.rules import PermissionAction
from ironhive.ports.approval import RiskLevel

GENERIC_PROMPT = "Allow this operation?"
COMMAND_PROMPT = "Allow executing this command?"
DELETE_PROMPT = "Allow deleting this file?"

_LEVEL_ORDER = (RiskLevel.LOW, RiskLevel.MEDIUM, RiskLevel.HIGH, RiskLevel.CRITICAL)


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    """The judgement of one tool call.

    Attributes:
        action: Allow runs the call, deny refuses it, ask defers to a human.
        level: How risky the call is (``LOW`` for an allowed call).
        reason: Why the call is denied or asked about (the rule's reason or a description of the call); ``None`` for
            an allowed call.
        prompt: The question to put to the human; set for ``ask`` verdicts only.
    """

    action: PermissionAction
    level: RiskLevel
    reason: str | None = None
    prompt: str | None = None

    @classmethod
    def allow(cls) -> Verdict:
        """An allowed call: no reason, no prompt, low risk."""
        return cls(action=PermissionAction.ALLOW, level=RiskLevel.LOW)

    @classmethod
    def deny(cls, level: RiskLevel, reason: str) -> Verdict:
        """A refused call.

        Args:
            level: The call's risk.
            reason: Why it is refused (shown to the model).
        """
        return cls(action=PermissionAction.DENY, level=level, reason=reason)

    @classmethod
    def ask(cls, level: RiskLevel, reason: str, prompt: str = GENERIC_PROMPT) -> Verdict:
        """A call a human must approve.

        Args:
            level: The call's risk.
            reason: Why approval is needed.
            prompt: The question put to the human.
        """
        return cls(action=PermissionAction.ASK, level=level, reason=reason, prompt=prompt)


def higher_level(first: RiskLevel, second: RiskLevel) -> RiskLevel:
    """Return the riskier of two levels."""
    return first if _LEVEL_ORDER.index(first) >= _LEVEL_ORDER.index(second) else second


def truncate_path(path: str) -> str:
    """Shorten a path for a reason: longer than 60 characters becomes ``...`` plus its last 57."""
    return path if len(path) <= 60 else "..." + path[-57:]


def truncate_command(command: str) -> str:
    """Shorten a command for a reason: longer than 50 characters becomes its first 50 plus ``...``."""
    return command if len(command) <= 50 else command[:50] + "..."
