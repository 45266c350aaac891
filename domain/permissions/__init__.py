"""The permission engine: rules, path and shell-command judgement, the built-in defaults."""

from __future__ import annotations

from ironhive.domain.permissions.modes import (
    InvalidModeTransitionError,
    Mode,
    ModeStateMachine,
    ModeTrigger,
    is_read_only_tool,
    is_tool_offered,
    next_mode,
)
from ironhive.domain.permissions.policy import ToolCallPolicy, normalize_tool_name
from ironhive.domain.permissions.rules import DEFAULT_POLICY, PermissionAction, PermissionPolicy, PermissionRule
from ironhive.domain.permissions.shell import ShellParseError, split_shell_command
from ironhive.domain.permissions.verdict import Verdict

__all__ = [
    "DEFAULT_POLICY",
    "InvalidModeTransitionError",
    "Mode",
    "ModeStateMachine",
    "ModeTrigger",
    "PermissionAction",
    "PermissionPolicy",
    "PermissionRule",
    "ShellParseError",
    "ToolCallPolicy",
    "Verdict",
    "is_read_only_tool",
    "is_tool_offered",
    "next_mode",
    "normalize_tool_name",
    "split_shell_command",
]
