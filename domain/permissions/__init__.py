"""The permission engine: rules, path and shell-command judgement, the built-in defaults."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

# Where each name lives; imported on first access only (PEP 562): importing one module of the engine (its rules, to
# read a permission file) does not import the others (the shell-command judge, for one).
_EXPORTS = {
    **dict.fromkeys(
        (
            "InvalidModeTransitionError",
            "Mode",
            "ModeStateMachine",
            "ModeTrigger",
            "is_read_only_tool",
            "is_tool_offered",
            "next_mode",
        ),
        "ironhive.domain.permissions.modes",
    ),
    **dict.fromkeys(("ToolCallPolicy", "normalize_tool_name"), "ironhive.domain.permissions.policy"),
    **dict.fromkeys(
        ("DEFAULT_POLICY", "PermissionAction", "PermissionPolicy", "PermissionRule"),
        "ironhive.domain.permissions.rules",
    ),
    **dict.fromkeys(("ShellParseError", "split_shell_command"), "ironhive.domain.permissions.shell"),
    "Verdict": "ironhive.domain.permissions.verdict",
}

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


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(__import__(module, fromlist=[name]), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
