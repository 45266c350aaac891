"""Judgement of shell commands: always-denied patterns, per-simple-command bash rules and the risk level of an ask."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ironhive.domain.permissions.evaluator import RuleOutcome, evaluate_rules, glob_matches, select_rule
from ironhive.domain.permissions.rules import PermissionAction, PermissionPolicy, PermissionRule
from ironhive.domain.permissions.shell import ShellParseError, split_shell_command
from ironhive.domain.permissions.verdict import COMMAND_PROMPT, Verdict, higher_level, truncate_command
from ironhive.ports.approval import RiskLevel

ALWAYS_DENIED_PATTERNS: tuple[str, ...] = (
    ":(){:|:&};:",  # fork bomb
    "> /dev/sda",
    "dd if=/dev/",
    "mkfs.",
    "fdisk",
    "format c:",
    "rm -rf /",
    "rm -rf /*",
    "chmod 777 /",
    "chmod -r 777 /",
    "| bash",
    "| sh",
    "| /bin/bash",
    "| /bin/sh",
)
"""Lowercase substrings refused whatever the rules say (checked on the whole command and on each simple command)."""

_CRITICAL_PATTERNS = ("rm -rf", "del /s /q", "format ", "fdisk", "mkfs", ":(){:|:&};:", "> /dev/sda", "dd if=")
_DANGEROUS = "Potentially dangerous command"
_NO_COMMAND = "Shell command with no command specified"
# A rule pattern spelling an operator can only describe a whole command line, never one simple command.
_COMPOUND_MARKERS = ("|", ";", "&", "\n", "`", "$(")
_ASSIGNMENTS = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=\S* +)+")


def is_always_denied(command: str) -> bool:
    """Tell whether ``command`` contains one of the always-denied patterns (case-insensitive)."""
    lower = command.lower()
    return any(pattern in lower for pattern in ALWAYS_DENIED_PATTERNS)


def classify_command(command: str) -> RiskLevel:
    """The risk level shown when a command is asked about.

    Args:
        command: A command line or one simple command.

    Returns:
        Critical for destructive commands, high for elevation, world-writable chmod or piping a download into a
        shell, medium otherwise.
    """
    lower = command.strip().lower()
    if is_always_denied(lower) or any(pattern in lower for pattern in _CRITICAL_PATTERNS):
        return RiskLevel.CRITICAL
    if (
        lower.startswith(("sudo ", "runas "))
        or "chmod 777" in lower
        or (("curl" in lower or "wget" in lower) and "| sh" in lower)
    ):
        return RiskLevel.HIGH
    return RiskLevel.MEDIUM


def judge_command(policy: PermissionPolicy, command: str) -> Verdict:
    """Judge a shell command line with the policy's bash rules.

    The line is split into simple commands; each is matched against the bash rules on its own, so an allow rule such
    as ``git *`` never covers what follows a ``;``. One deny denies the line, one ask asks, and it is allowed only when
    every part is. Rules whose pattern spells an operator (``curl * | *sh*``) are matched against the whole line, and
    only their deny or ask counts. A line that cannot be split is asked about, never allowed.

    Args:
        policy: The permission policy.
        command: The command line as the shell tool would run it.

    Returns:
        The verdict, with levels and reasons as the permission engine documents them.
    """
    trimmed = command.strip()
    if not trimmed:
        return Verdict.deny(RiskLevel.HIGH, _NO_COMMAND)
    if is_always_denied(trimmed):
        return Verdict.deny(RiskLevel.CRITICAL, _DANGEROUS)
    try:
        parts = split_shell_command(trimmed)
    except ShellParseError as error:
        return _judge_unparseable(policy, trimmed, error)
    if not parts:
        return Verdict.deny(RiskLevel.HIGH, _NO_COMMAND)
    if any(is_always_denied(part) for part in parts):
        return Verdict.deny(RiskLevel.CRITICAL, _DANGEROUS)

    outcomes = [evaluate_rules(policy.bash, part, glob_matches, policy.default_action) for part in parts]
    # Assignments stay in the text an allow rule must cover, but they must not hide a command from deny and ask rules.
    for part in parts:
        bare = _ASSIGNMENTS.sub("", part)
        rule = select_rule(policy.bash, bare, glob_matches) if bare != part else None
        if rule is not None and rule.action != PermissionAction.ALLOW:
            outcomes.append(RuleOutcome(action=rule.action, rule=rule))
    compound = select_rule(_compound_rules(policy.bash), trimmed, glob_matches)
    if compound is not None:
        outcomes.insert(0, RuleOutcome(action=compound.action, rule=compound))

    denied = _first(outcomes, PermissionAction.DENY)
    if denied is not None:
        return Verdict.deny(RiskLevel.CRITICAL, denied.reason or f"Denied command: {truncate_command(trimmed)}")
    asked = _first(outcomes, PermissionAction.ASK)
    if asked is not None:
        level = classify_command(trimmed)
        for part in parts:
            level = higher_level(level, classify_command(part))
        return Verdict.ask(level, asked.reason or f"Shell command: {truncate_command(trimmed)}", COMMAND_PROMPT)
    return Verdict.allow()


def _judge_unparseable(policy: PermissionPolicy, command: str, error: ShellParseError) -> Verdict:
    # Only a deny may be taken from rules here: an allow rule cannot vouch for text nobody could take apart.
    rule = select_rule(policy.bash, command, glob_matches)
    if rule is not None and rule.action == PermissionAction.DENY:
        return Verdict.deny(RiskLevel.CRITICAL, rule.reason or f"Denied command: {truncate_command(command)}")
    level = higher_level(RiskLevel.HIGH, classify_command(command))
    reason = f"Shell command could not be parsed ({error}): {truncate_command(command)}"
    return Verdict.ask(level, reason, COMMAND_PROMPT)


def _compound_rules(rules: Sequence[PermissionRule]) -> list[PermissionRule]:
    return [
        rule
        for rule in rules
        if rule.action != PermissionAction.ALLOW and any(marker in rule.pattern for marker in _COMPOUND_MARKERS)
    ]


def _first(outcomes: Sequence[RuleOutcome], action: PermissionAction) -> RuleOutcome | None:
    return next((outcome for outcome in outcomes if outcome.action == action), None)
