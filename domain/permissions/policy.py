"""ToolCallPolicy: judges one tool call (allow, deny or ask) from its name and arguments with a permission policy."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ironhive.domain.permissions.evaluator import evaluate_rules, glob_matches
from ironhive.domain.permissions.modes import is_read_only_tool
from ironhive.domain.permissions.paths import resolve_root, resolve_target
from ironhive.domain.permissions.rules import PermissionAction, PermissionPolicy, PermissionRule
from ironhive.domain.permissions.verdict import DELETE_PROMPT, Verdict, truncate_path
from ironhive.ports.approval import RiskLevel
from ironhive.ports.chat import JsonValue
from ironhive.ports.matching import PathPatternMatcher

__all__ = ["ToolCallPolicy", "Verdict", "normalize_tool_name"]

_CANONICAL_NAMES: Mapping[str, str] = {
    "readfile": "read_file",
    "writefile": "write_file",
    "editfile": "edit_file",
    "deletefile": "delete_file",
    "executecommand": "execute_command",
    "globfiles": "glob_files",
    "grepfiles": "grep_files",
    "listdirectory": "list_directory",
    "managetodo": "manage_todo",
    "shell": "shell",
}
_DIRECTORY_TOOLS = frozenset({"glob_files", "grep_files", "list_directory"})
_SHELL_TOOLS = frozenset({"execute_command", "shell"})
# Arguments of the directory tools that are globs and may climb out of the searched directory ("../../etc/*").
_GLOB_ARGUMENTS: Mapping[str, tuple[str, ...]] = {
    "glob_files": ("pattern",),
    "grep_files": ("file_pattern",),
}
_WILDCARDS = frozenset("*?[{")


def normalize_tool_name(name: str) -> str:
    """Map a built-in tool's PascalCase name to the snake_case one the rules are written for (case-insensitive).

    Args:
        name: The tool's name (``ReadFile``, ``read_file``, ``mcp__x__y``, ...).

    Returns:
        ``read_file`` for ``ReadFile``/``readfile``/``READ_FILE`` and so on; other names unchanged.
    """
    lower = name.lower()
    if lower in _CANONICAL_NAMES.values():
        return lower
    return _CANONICAL_NAMES.get(lower, name)


@dataclass(frozen=True, kw_only=True, slots=True)
class _PathOutcome:
    action: PermissionAction
    rule: PermissionRule | None
    external: bool


class ToolCallPolicy:
    """Judges tool calls with a ``PermissionPolicy`` over one working directory.

    File tools answer to the read/edit path rules (or, outside the working directory, to ``external_directory``),
    deletes additionally to ``ask_before_delete``, the shell tool to the bash rules per simple command, ``mcp__*``
    tools to ``mcp_tools`` and every other tool to ``tools`` by name; anything unmatched falls to the default action.
    """

    def __init__(self, policy: PermissionPolicy, root: str | os.PathLike[str], matcher: PathPatternMatcher) -> None:
        """Create the policy.

        Args:
            policy: The rules.
            root: The working directory the file tools resolve paths against (resolved here, symlinks followed).
            matcher: The path pattern matcher for the read, edit and external_directory rules.
        """
        self._policy = policy
        self._root = resolve_root(root)
        self._matcher = matcher

    @property
    def policy(self) -> PermissionPolicy:
        """The rules this policy judges by."""
        return self._policy

    @property
    def root(self) -> str:
        """The resolved working directory."""
        return self._root

    def is_read_only_tool(self, tool_name: str) -> bool:
        """Tell whether a tool only looks: a built-in read-only tool or one named by ``read_only_tools``."""
        return is_read_only_tool(tool_name, self._policy.read_only_tools)

    def evaluate(self, tool_name: str, arguments: Mapping[str, JsonValue] | None) -> Verdict:
        """Judge one call.

        Args:
            tool_name: The tool's name as the model called it.
            arguments: The call's arguments (``None`` when there are none).

        Returns:
            The verdict with its risk level, reason and approval prompt.
        """
        args: Mapping[str, JsonValue] = arguments or {}
        name = normalize_tool_name(tool_name)
        if name == "read_file":
            return self._judge_read(args)
        if name in ("write_file", "edit_file"):
            return self._judge_write(args, "Edit" if name == "edit_file" else "Write")
        if name == "delete_file":
            return self._judge_delete(args)
        if name in _DIRECTORY_TOOLS:
            return self._judge_directory_tool(tool_name, name, args)
        if name in _SHELL_TOOLS:
            from ironhive.domain.permissions.commands import judge_command  # the shell parser: at the first command

            commands = _string_arguments(args, "command") or [""]
            return _strictest([judge_command(self._policy, command) for command in commands])
        if tool_name.lower().startswith("mcp__"):
            outcome = evaluate_rules(self._policy.mcp_tools, tool_name, glob_matches, self._policy.default_action)
            return _to_verdict(outcome.action, outcome.reason, f"MCP tool: {tool_name}")
        return self._judge_by_name(tool_name, name)

    # -- per tool -----------------------------------------------------------------------------------------------

    def _judge_read(self, args: Mapping[str, JsonValue]) -> Verdict:
        paths = _string_arguments(args, "path")
        if paths is None:
            return Verdict.ask(RiskLevel.MEDIUM, "Read operation with unknown path")
        verdicts = [
            _path_verdict(self._judge_path(self._policy.read, path), f"Read file: {truncate_path(path)}")
            for path in paths
        ]
        return _strictest(verdicts)

    def _judge_write(self, args: Mapping[str, JsonValue], verb: str) -> Verdict:
        paths = _string_arguments(args, "path")
        if not paths:
            return Verdict.ask(RiskLevel.MEDIUM, f"{verb} operation with unknown path")
        verdicts = [
            _path_verdict(self._judge_path(self._policy.edit, path), f"{verb} file: {truncate_path(path)}")
            for path in paths
        ]
        return _strictest(verdicts)

    def _judge_delete(self, args: Mapping[str, JsonValue]) -> Verdict:
        paths = _string_arguments(args, "path")
        if not paths:
            return Verdict.ask(RiskLevel.HIGH, "Delete operation with unknown path")
        return _strictest([self._judge_one_delete(path) for path in paths])

    def _judge_one_delete(self, path: str) -> Verdict:
        # A delete removes the name itself (a symbolic link, not what it points to), so that name is judged; where a
        # link points is judged too, so a link to the outside still counts as outside. The stricter answer stands.
        outcomes = (
            self._judge_path(self._policy.edit, path, follow_last=False),
            self._judge_path(self._policy.edit, path),
        )
        outcome = max(outcomes, key=lambda item: (_SEVERITY[item.action], item.external))
        shown = truncate_path(path)
        if outcome.action == PermissionAction.ALLOW and self._policy.ask_before_delete:
            # Asked only because ask_before_delete escalates an allowed edit: a confirmation, not a red flag.
            return Verdict.ask(RiskLevel.MEDIUM, f"File deletion: {shown}", DELETE_PROMPT)
        return _path_verdict(outcome, f"Delete file: {shown}", level=RiskLevel.HIGH)

    def _judge_directory_tool(self, tool_name: str, name: str, args: Mapping[str, JsonValue]) -> Verdict:
        by_name = self._judge_by_name(tool_name, name)
        if by_name.action == PermissionAction.DENY:
            return by_name
        directories = _string_arguments(args, "path")
        if directories is None:
            return _strictest([by_name, Verdict.ask(RiskLevel.MEDIUM, "Search with unknown directory")])
        searched = directories or ["."]
        targets = list(searched)
        for key in _GLOB_ARGUMENTS.get(name, ()):
            for pattern in _string_arguments(args, key) or []:
                base = _glob_base(pattern)
                targets.extend(os.path.join(directory, base) for directory in searched if base)
        for target in targets:
            outcome = self._judge_path(self._policy.read, target, directory=True)
            # Read patterns are written for files: only a rule that speaks about this directory (or its being outside
            # the working directory) is a verdict on it; "no file pattern matches the directory name" is not.
            if outcome.action == PermissionAction.ALLOW or (outcome.rule is None and not outcome.external):
                continue
            by_path = _path_verdict(outcome, f"Search directory: {truncate_path(target)}")
            if by_path.action == PermissionAction.DENY or by_name.action == PermissionAction.ALLOW:
                by_name = by_path
        return by_name

    def _judge_by_name(self, tool_name: str, name: str) -> Verdict:
        def matches(pattern: str, _target: str) -> bool:
            return glob_matches(pattern, tool_name) or glob_matches(pattern, name)

        outcome = evaluate_rules(self._policy.tools, tool_name, matches, self._policy.default_action)
        return _to_verdict(outcome.action, outcome.reason, f"Tool: {tool_name}")

    # -- paths --------------------------------------------------------------------------------------------------

    def _judge_path(
        self, rules: tuple[PermissionRule, ...], path: str, *, directory: bool = False, follow_last: bool = True
    ) -> _PathOutcome:
        target = resolve_target(self._root, path, directory=directory, follow_last=follow_last)
        default = self._policy.default_action
        if not target.external:
            outcome = evaluate_rules(rules, target.match_path, self._matcher.matches, default)
            return _PathOutcome(action=outcome.action, rule=outcome.rule, external=False)
        outcome = evaluate_rules(self._policy.external_directory, target.match_path, self._matcher.matches, default)
        return _PathOutcome(action=outcome.action, rule=outcome.rule, external=True)


def _to_verdict(action: PermissionAction, reason: str | None, context: str, level: RiskLevel | None = None) -> Verdict:
    if action == PermissionAction.ALLOW:
        return Verdict.allow()
    if action == PermissionAction.DENY:
        return Verdict.deny(level or RiskLevel.CRITICAL, reason or f"Denied: {context}")
    return Verdict.ask(level or RiskLevel.MEDIUM, reason or context)


def _path_verdict(outcome: _PathOutcome, context: str, level: RiskLevel | None = None) -> Verdict:
    reason = outcome.rule.reason if outcome.rule is not None else None
    if outcome.external and outcome.rule is None:
        context = f"{context} (outside the working directory)"
    return _to_verdict(outcome.action, reason, context, level)


def _string_arguments(args: Mapping[str, JsonValue], name: str) -> list[str] | None:
    """Every non-empty value the tool could take for parameter ``name``; ``None`` when one is not a usable path.

    The tools accept camelCase spellings of their snake_case parameters, so every key that equals ``name`` ignoring
    case and underscores is a candidate, and the caller judges each one: the strictest verdict stands.
    """
    wanted = name.replace("_", "")
    values: list[str] = []
    for key, value in args.items():
        if key.replace("_", "").lower() != wanted or value is None or value == "":
            continue
        if isinstance(value, str):
            values.append(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            values.append(str(value))  # the tools coerce a number to the string they open
        else:
            return None
    return values


_SEVERITY = {PermissionAction.ALLOW: 0, PermissionAction.ASK: 1, PermissionAction.DENY: 2}


def _strictest(verdicts: list[Verdict]) -> Verdict:
    """The first of the most severe verdicts (deny over ask over allow); allow when there are none."""
    strictest = Verdict.allow()
    for verdict in verdicts:
        if _SEVERITY[verdict.action] > _SEVERITY[strictest.action]:
            strictest = verdict
    return strictest


def _glob_base(pattern: str) -> str:
    """The directory part of a glob before its first wildcard segment (``../../etc`` for ``../../etc/*.conf``)."""
    segments = pattern.replace("\\", "/").split("/")
    base: list[str] = []
    for segment in segments[:-1]:
        if any(char in _WILDCARDS for char in segment):
            break
        base.append(segment)
    if pattern.startswith("/") and base == [""]:
        return "/"
    return "/".join(base)
