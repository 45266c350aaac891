"""Judgement of shell commands: always-denied patterns, per-simple-command bash rules and the risk level of an ask."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ironhive.domain.permissions.command_forms import (
    Form,
    command_forms,
    flags_match,
    nested_commands,
    nested_scripts,
)
from ironhive.domain.permissions.command_risks import always_denied, is_fork_bomb, unsafe_reason
from ironhive.domain.permissions.evaluator import Matcher, RuleOutcome, evaluate_rules, glob_matches, select_rule
from ironhive.domain.permissions.rules import PermissionAction, PermissionPolicy, PermissionRule
from ironhive.domain.permissions.shell import ShellParseError, SimpleCommand, parse_shell_command
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
"""Lowercase substrings refused whatever the rules say (checked on the whole command and on each simple command).

The same dangers in other spellings (``rm -fr /``, ``curl x|dash``, ``/bin/rm -r -f ~``, a renamed fork bomb) are
recognised by shape in ``command_risks``."""

_CRITICAL_PATTERNS = ("rm -rf", "del /s /q", "format ", "fdisk", "mkfs", ":(){:|:&};:", "> /dev/sda", "dd if=")
_DANGEROUS = "Potentially dangerous command"
_NO_COMMAND = "Shell command with no command specified"
# A rule pattern spelling an operator can only describe a whole command line, never one simple command.
_COMPOUND_MARKERS = ("|", ";", "&", "\n", "`", "$(")
_MAX_NESTED_SCRIPTS = 8


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
        lower.startswith(("sudo ", "runas ", "doas "))
        or "chmod 777" in lower
        or (("curl" in lower or "wget" in lower) and "| sh" in lower)
    ):
        return RiskLevel.HIGH
    return RiskLevel.MEDIUM


def judge_command(policy: PermissionPolicy, command: str) -> Verdict:
    """Judge a shell command line with the policy's bash rules.

    The line is split into simple commands; each is matched against the bash rules on its own, so an allow rule such
    as ``git status *`` never covers what follows a ``;``. One deny denies the line, one ask asks, and it is allowed
    only when every part is. Deny and ask rules are also matched against each part's normal forms (assignments,
    wrappers such as ``env``/``nice``/``sudo`` and program paths stripped, flags split: ``/bin/rm -r -f x`` is
    ``rm -rf x``) and against what a part hands to a shell (``sh -c``, ``eval``, ``find -exec``). Rules whose pattern
    spells an operator (``curl * | *sh*``) are matched against the whole line, and only their deny or ask counts. An
    allowed line still asks when a part redirects to a file, writes into ``.ironhive``/``.git`` or passes an option
    that runs a program or writes elsewhere. A line that cannot be split is asked about, never allowed.

    Args:
        policy: The permission policy.
        command: The command line as the shell tool would run it.

    Returns:
        The verdict, with levels and reasons as the permission engine documents them.
    """
    trimmed = command.strip()
    if not trimmed:
        return Verdict.deny(RiskLevel.HIGH, _NO_COMMAND)
    if is_always_denied(trimmed) or is_fork_bomb(trimmed):
        return Verdict.deny(RiskLevel.CRITICAL, _DANGEROUS)
    try:
        parts = parse_shell_command(trimmed)
        judged = _expand(parts, depth=0)
    except ShellParseError as error:
        return _judge_unparseable(policy, trimmed, error)
    if not parts:
        return Verdict.deny(RiskLevel.HIGH, _NO_COMMAND)
    if any(is_always_denied(item.command.text) or always_denied(item.command, item.forms) for item in judged):
        return Verdict.deny(RiskLevel.CRITICAL, _DANGEROUS)

    outcomes = [evaluate_rules(policy.bash, part.text, glob_matches, policy.default_action) for part in parts]
    # Only a deny or ask is taken from normal forms and nested commands: an allow must cover the text as written.
    for item in judged:
        for form in item.forms:
            rule = select_rule(policy.bash, " ".join(form), _form_matcher(form))
            if rule is not None and rule.action != PermissionAction.ALLOW:
                outcomes.append(RuleOutcome(action=rule.action, rule=rule))
    compound = select_rule(_compound_rules(policy.bash), trimmed, glob_matches)
    if compound is not None:
        outcomes.insert(0, RuleOutcome(action=compound.action, rule=compound))

    denied = _first(outcomes, PermissionAction.DENY)
    if denied is not None:
        return Verdict.deny(RiskLevel.CRITICAL, denied.reason or f"Denied command: {truncate_command(trimmed)}")
    asked = _first(outcomes, PermissionAction.ASK)
    unsafe = next((reason for item in judged if (reason := unsafe_reason(item.command, item.forms))), None)
    if asked is None and unsafe is None:
        return Verdict.allow()
    level = classify_command(trimmed)
    for item in judged:
        level = higher_level(level, classify_command(item.command.text))
    if asked is not None:
        return Verdict.ask(level, asked.reason or f"Shell command: {truncate_command(trimmed)}", COMMAND_PROMPT)
    return Verdict.ask(level, f"{unsafe}: {truncate_command(trimmed)}", COMMAND_PROMPT)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Judged:
    """One simple command the line would run (written, or handed to a shell), with its normal forms."""

    command: SimpleCommand
    forms: tuple[Form, ...]


def _expand(parts: Sequence[SimpleCommand], *, depth: int) -> list[_Judged]:
    """The parts with their forms, followed by what each hands to a shell or runs through ``find -exec``."""
    if depth > _MAX_NESTED_SCRIPTS:
        raise ShellParseError("shell scripts nested too deeply")
    judged: list[_Judged] = []
    for part in parts:
        forms = command_forms(part.words)
        judged.append(_Judged(command=part, forms=tuple(forms)))
        for form in forms:
            for script in nested_scripts(form):
                judged.extend(_expand(parse_shell_command(script), depth=depth + 1))
            for inner in nested_commands(form):
                judged.append(_Judged(command=SimpleCommand(text=" ".join(inner), words=inner), forms=(inner,)))
    return judged


def _form_matcher(form: Form) -> Matcher:
    def matches(pattern: str, text: str) -> bool:
        return glob_matches(pattern, text) or flags_match(pattern, form)

    return matches


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
