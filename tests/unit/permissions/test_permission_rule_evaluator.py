"""Rule selection: highest priority wins, ties go to the first listed, no match falls to the default action."""

from __future__ import annotations

import pytest

from ironhive.domain.permissions.evaluator import evaluate_rules, glob_matches, select_rule
from ironhive.domain.permissions.rules import PermissionAction, PermissionRule

ALLOW, DENY, ASK = PermissionAction.ALLOW, PermissionAction.DENY, PermissionAction.ASK


def rule(pattern: str, action: PermissionAction, priority: int = 0, reason: str | None = None) -> PermissionRule:
    return PermissionRule(pattern=pattern, action=action, priority=priority, reason=reason)


@pytest.mark.parametrize(
    ("rules", "target", "expected_action", "expected_reason"),
    [
        # the highest priority among matching rules wins, wherever it is listed
        ([rule("git *", ALLOW), rule("git push*", DENY, 10, "no push")], "git push origin", DENY, "no push"),
        ([rule("git push*", DENY, 10, "no push"), rule("git *", ALLOW)], "git push origin", DENY, "no push"),
        # a non-matching high-priority rule does not take part
        ([rule("git *", ALLOW), rule("git push*", DENY, 10)], "git status", ALLOW, None),
        # ties go to the rule listed first
        ([rule("npm *", ALLOW, 5, "first"), rule("npm *", DENY, 5, "second")], "npm test", ALLOW, "first"),
        ([rule("npm *", DENY, 5, "first"), rule("npm *", ALLOW, 5, "second")], "npm test", DENY, "first"),
        # negative priorities still order
        ([rule("*", ASK, -1, "low"), rule("ls*", ALLOW, -5)], "ls -la", ASK, "low"),
        # no match, empty rule list and blank target fall to the default action
        ([rule("git *", ALLOW)], "make", ASK, None),
        ([], "git status", ASK, None),
        ([rule("*", ALLOW)], "   ", ASK, None),
        # case-insensitive
        ([rule("GIT *", DENY, 0, "upper")], "git status", DENY, "upper"),
        ([rule("git *", ALLOW)], "GIT STATUS", ALLOW, None),
    ],
)
def test_rule_selection_table(
    rules: list[PermissionRule], target: str, expected_action: PermissionAction, expected_reason: str | None
) -> None:
    outcome = evaluate_rules(rules, target, glob_matches, ASK)
    assert outcome.action == expected_action
    assert outcome.reason == expected_reason


def test_default_action_is_whatever_the_caller_passes() -> None:
    outcome = evaluate_rules([rule("git *", ALLOW)], "make", glob_matches, DENY)
    assert outcome.action == DENY
    assert outcome.rule is None


def test_select_rule_returns_the_rule_object_that_applied() -> None:
    winner = rule("a*", DENY, 3)
    assert select_rule([rule("a*", ALLOW, 1), winner, rule("ab", ALLOW, 3)], "ab", glob_matches) is winner


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("git *", "git add src/a.py", True),  # * crosses "/" (the original's defect was that it did not)
        ("git *", "git", False),
        ("git *", "FOO=1 rm -rf x", False),
        ("rm -rf *", "rm -rf build/out", True),
        ("*_list", "mcp__server__files_list", True),
        ("glob*", "glob_files", True),
        ("read_file", "READ_FILE", True),
        ("read_file", "read_files", False),
        ("a?c", "abc", True),
        ("a?c", "a/c", True),
        ("a?c", "ac", False),
        ("a.c", "abc", False),  # regex metacharacters are literal
        ("[ab]", "a", False),
        ("[ab]", "[AB]", True),
        ("x*", "x\nnewline", True),
    ],
)
def test_glob_table(pattern: str, text: str, expected: bool) -> None:
    assert glob_matches(pattern, text) is expected
