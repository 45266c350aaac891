"""Judging shell commands with the bash rules: per-part rules, always-denied patterns, levels, reasons, prompts."""

from __future__ import annotations

import pytest

from ironhive.domain.permissions.commands import classify_command, judge_command
from ironhive.domain.permissions.rules import DEFAULT_POLICY, PermissionAction, PermissionPolicy, PermissionRule
from ironhive.ports.approval import RiskLevel

ALLOW, DENY, ASK = PermissionAction.ALLOW, PermissionAction.DENY, PermissionAction.ASK
PROMPT = "Allow executing this command?"


@pytest.mark.parametrize(
    ("command", "action", "level", "reason"),
    [
        ("git status", ALLOW, RiskLevel.LOW, None),
        ("git add src/a.py", ALLOW, RiskLevel.LOW, None),
        ("  npm test  ", ALLOW, RiskLevel.LOW, None),
        ("git status && npm test | cargo fmt", ALLOW, RiskLevel.LOW, None),
        ("", DENY, RiskLevel.HIGH, "Shell command with no command specified"),
        ("   ", DENY, RiskLevel.HIGH, "Shell command with no command specified"),
        ("# nothing", DENY, RiskLevel.HIGH, "Shell command with no command specified"),
        ("rm -rf /", DENY, RiskLevel.CRITICAL, "Potentially dangerous command"),
        ("RM -RF /", DENY, RiskLevel.CRITICAL, "Potentially dangerous command"),
        (":(){:|:&};:", DENY, RiskLevel.CRITICAL, "Potentially dangerous command"),
        ("dd if=/dev/zero of=x", DENY, RiskLevel.CRITICAL, "Potentially dangerous command"),
        ("curl x | sh", DENY, RiskLevel.CRITICAL, "Potentially dangerous command"),
        ("r''m -rf  /", DENY, RiskLevel.CRITICAL, "Potentially dangerous command"),  # caught on the parsed part
        ("rm -rf build", DENY, RiskLevel.CRITICAL, "Destructive command"),
        ("sudo ls", DENY, RiskLevel.CRITICAL, "Elevated privileges"),
        ("curl x | zsh", DENY, RiskLevel.CRITICAL, "Potentially dangerous command"),  # a pipe into any shell
        ("curl -s x | pwsh -", DENY, RiskLevel.CRITICAL, "Remote code execution"),  # compound rule on the whole line
        ("git status; rm -rf build", DENY, RiskLevel.CRITICAL, "Destructive command"),
        ("git status; rm -rf ~", DENY, RiskLevel.CRITICAL, "Potentially dangerous command"),  # the home directory
        ("make", ASK, RiskLevel.MEDIUM, "Shell command: make"),
        ("git status; make", ASK, RiskLevel.MEDIUM, "Shell command: git status; make"),
        ("chmod 777 x", ASK, RiskLevel.HIGH, "Shell command: chmod 777 x"),
        ("mkfs x", ASK, RiskLevel.CRITICAL, "Shell command: mkfs x"),
        ("del /s /q x", ASK, RiskLevel.CRITICAL, "Shell command: del /s /q x"),
        ("git status && chmod 777 x", ASK, RiskLevel.HIGH, "Shell command: git status && chmod 777 x"),
        ("FOO=1 git status", ASK, RiskLevel.MEDIUM, "Shell command: FOO=1 git status"),
        # assignments do not hide a command from deny rules either
        ("FOO=1 rm -rf x", DENY, RiskLevel.CRITICAL, "Destructive command"),
        ("A=1 B[2]=x C+=y sudo ls", DENY, RiskLevel.CRITICAL, "Elevated privileges"),
    ],
)
def test_default_policy_table(command: str, action: PermissionAction, level: RiskLevel, reason: str | None) -> None:
    verdict = judge_command(DEFAULT_POLICY, command)
    assert (verdict.action, verdict.level, verdict.reason) == (action, level, reason)
    assert verdict.prompt == (PROMPT if action == ASK else None)


def test_allow_rule_does_not_cover_what_follows_a_separator() -> None:
    # the original matched "git *" against the whole line, so anything after "git x;" rode along
    verdict = judge_command(DEFAULT_POLICY, "git status; make install")
    assert verdict.action == ASK


def test_long_commands_are_cut_to_fifty_characters_in_reasons() -> None:
    command = "python -c " + "x" * 60
    verdict = judge_command(DEFAULT_POLICY, command)
    assert verdict.reason == f"Shell command: {command[:50]}..."
    policy = PermissionPolicy(bash=(PermissionRule(pattern="python *", action=DENY),))
    assert judge_command(policy, command).reason == f"Denied command: {command[:50]}..."


def test_unparseable_command_is_asked_with_high_level_never_allowed() -> None:
    everything = PermissionPolicy(bash=(PermissionRule(pattern="*", action=ALLOW),), default_action=ALLOW)
    verdict = judge_command(everything, 'echo "unterminated')
    assert verdict.action == ASK
    assert verdict.level == RiskLevel.HIGH
    assert verdict.reason is not None
    assert verdict.reason.startswith("Shell command could not be parsed (unclosed double quote)")
    assert verdict.prompt == PROMPT


def test_unparseable_command_still_takes_a_deny_rule() -> None:
    verdict = judge_command(DEFAULT_POLICY, "sudo echo 'x")
    assert (verdict.action, verdict.reason) == (DENY, "Elevated privileges")


def test_compound_allow_rules_are_not_trusted_for_the_whole_line() -> None:
    policy = PermissionPolicy(bash=(PermissionRule(pattern="cd * && npm test*", action=ALLOW),))
    assert judge_command(policy, "cd app && npm test; rm x").action == ASK


def test_compound_ask_rule_asks_with_its_reason() -> None:
    policy = PermissionPolicy(
        bash=(
            PermissionRule(pattern="*", action=ALLOW),
            PermissionRule(pattern="* | tee *", action=ASK, priority=1, reason="Writes a file"),
        )
    )
    verdict = judge_command(policy, "git log | tee out.txt")
    assert (verdict.action, verdict.reason) == (ASK, "Writes a file")


def test_rule_reason_of_the_first_asking_part_is_used() -> None:
    policy = PermissionPolicy(
        bash=(
            PermissionRule(pattern="git *", action=ALLOW),
            PermissionRule(pattern="make*", action=ASK, reason="Builds"),
        )
    )
    verdict = judge_command(policy, "git status && make all")
    assert (verdict.action, verdict.reason, verdict.level) == (ASK, "Builds", RiskLevel.MEDIUM)


def test_default_action_applies_to_unmatched_parts() -> None:
    permissive = PermissionPolicy(default_action=ALLOW)
    assert judge_command(permissive, "ls; pwd").action == ALLOW
    strict = PermissionPolicy(default_action=DENY)
    verdict = judge_command(strict, "ls")
    assert (verdict.action, verdict.reason) == (DENY, "Denied command: ls")


@pytest.mark.parametrize(
    ("command", "level"),
    [
        ("ls", RiskLevel.MEDIUM),
        ("sudo ls", RiskLevel.HIGH),
        ("runas /user:x cmd", RiskLevel.HIGH),
        ("wget x -O- | sh", RiskLevel.CRITICAL),  # always-denied beats the curl/wget rule
        ("rm -rf build", RiskLevel.CRITICAL),
        ("format d:", RiskLevel.CRITICAL),
        ("fdisk -l", RiskLevel.CRITICAL),
        ("echo > /dev/sda", RiskLevel.CRITICAL),
    ],
)
def test_classify_levels(command: str, level: RiskLevel) -> None:
    assert classify_command(command) == level
