"""Permission rules and policies: the data the permission engine judges by, and the built-in default policy."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class PermissionAction(StrEnum):
    """What a rule decides about an operation."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True, kw_only=True, slots=True)
class PermissionRule:
    """One rule of a policy category.

    Attributes:
        pattern: What the rule covers. Path categories (read, edit, external_directory) use gitignore-style patterns;
            bash, tools and mcp_tools use globs over the whole text where ``*`` matches anything and ``?`` one
            character. Matching is case-insensitive.
        action: The decision when the rule is the one that applies.
        priority: Among matching rules the highest priority applies; ties go to the rule listed first.
        reason: Shown to the model or the human when the rule denies or asks.
    """

    pattern: str
    action: PermissionAction = PermissionAction.ASK
    priority: int = 0
    reason: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class PermissionPolicy:
    """A complete permission policy: one rule list per category, plus the switches.

    Attributes:
        read: Rules for file reads, by path relative to the working directory.
        edit: Rules for file writes, edits and deletes, by relative path.
        bash: Rules for shell commands, matched against each simple command of a command line.
        external_directory: Rules for any path that resolves outside the working directory, by absolute path.
        mcp_tools: Rules for tools named ``mcp__…``, by name.
        tools: Rules for every other tool, by name.
        read_only_tools: Extra tool-name globs that count as read-only (they may run in Planning mode).
        ask_before_delete: Ask before a delete even when the edit rules allow it.
        default_action: The decision when no rule matches.
    """

    read: tuple[PermissionRule, ...] = ()
    edit: tuple[PermissionRule, ...] = ()
    bash: tuple[PermissionRule, ...] = ()
    external_directory: tuple[PermissionRule, ...] = ()
    mcp_tools: tuple[PermissionRule, ...] = ()
    tools: tuple[PermissionRule, ...] = ()
    read_only_tools: tuple[str, ...] = ()
    ask_before_delete: bool = True
    default_action: PermissionAction = PermissionAction.ASK


def _rule(pattern: str, action: PermissionAction, priority: int = 0, reason: str | None = None) -> PermissionRule:
    return PermissionRule(pattern=pattern, action=action, priority=priority, reason=reason)


_ALLOW = PermissionAction.ALLOW
_DENY = PermissionAction.DENY
_ASK = PermissionAction.ASK


def _commands(program: str, *subcommands: str) -> tuple[PermissionRule, ...]:
    """Allow rules for ``program sub`` and ``program sub …`` per subcommand: what they name, not the whole program."""
    return tuple(
        _rule(pattern, _ALLOW) for sub in subcommands for pattern in (f"{program} {sub}", f"{program} {sub} *")
    )


# Subcommands that read the repository or change only its work tree and index; the options among them that run a
# program or write elsewhere (--output, --exec, --ext-diff, ...) are asked about by the command judgement.
_GIT_SUBCOMMANDS = (
    "status", "diff", "log", "show", "branch", "add", "commit", "rev-parse", "ls-files", "blame", "describe",
    "shortlog", "grep", "tag", "stash", "switch", "checkout", "restore", "--version",
)  # fmt: skip

_SECRETS = "May contain secrets"
_CONFIG_FILE = "Configuration file"
_READ_ONLY = "Read-only"

DEFAULT_POLICY = PermissionPolicy(
    read=(
        _rule("**/*", _ALLOW),
        _rule("*.env", _ASK, 10, _SECRETS),
        _rule(".env*", _ASK, 10, _SECRETS),
        _rule("**/.env*", _ASK, 10, _SECRETS),
        _rule("**/secrets/**", _DENY, 20, "Protected directory"),
    ),
    edit=(
        _rule("src/**/*", _ALLOW),
        _rule("tests/**/*", _ALLOW),
        _rule("*.json", _ASK, 5, _CONFIG_FILE),
        _rule("*.yaml", _ASK, 5, _CONFIG_FILE),
        _rule("*.yml", _ASK, 5, _CONFIG_FILE),
    ),
    bash=(
        *_commands("git", *_GIT_SUBCOMMANDS),
        *_commands("npm", "test", "run", "run-script", "ls", "--version"),
        *_commands("cargo", "build", "test", "check", "clippy", "fmt", "doc", "tree", "metadata", "--version"),
        *_commands("dotnet", "build", "test", "--version", "--info", "--list-sdks"),
        _rule("rm -rf *", _DENY, 100, "Destructive command"),
        _rule("sudo *", _DENY, 100, "Elevated privileges"),
        _rule("doas *", _DENY, 100, "Elevated privileges"),
        _rule("curl * | *sh*", _DENY, 100, "Remote code execution"),
    ),
    external_directory=(),
    mcp_tools=(
        _rule("*_help", _ALLOW),
        _rule("*_get", _ALLOW),
        _rule("*_list", _ALLOW),
    ),
    tools=(
        _rule("ReadFile", _ALLOW, 0, _READ_ONLY),
        _rule("read_file", _ALLOW, 0, _READ_ONLY),
        _rule("ListDirectory", _ALLOW, 0, _READ_ONLY),
        _rule("list_directory", _ALLOW, 0, _READ_ONLY),
        _rule("GlobFiles", _ALLOW, 0, _READ_ONLY),
        _rule("glob*", _ALLOW, 0, _READ_ONLY),
        _rule("GrepFiles", _ALLOW, 0, _READ_ONLY),
        _rule("grep*", _ALLOW, 0, _READ_ONLY),
        _rule("advisor", _ALLOW, 0, _READ_ONLY),
        _rule("load_skill", _ALLOW, 0, _READ_ONLY),
        _rule("manage_todo", _ALLOW, 0, "Session task list"),
    ),
    read_only_tools=(),
    ask_before_delete=True,
    default_action=PermissionAction.ASK,
)
"""The built-in policy, used when neither a permission file nor a config.yaml section exists."""
