"""Rule matching: which rule of a category applies to a target, and the name/command glob the non-path rules use."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from ironhive.domain.permissions.rules import PermissionAction, PermissionRule

Matcher = Callable[[str, str], bool]
"""Tells whether a pattern (first argument) covers a target (second argument)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RuleOutcome:
    """The decision for one target.

    Attributes:
        action: The applying rule's action, or the default action when none matched.
        rule: The rule that applied, or ``None`` when the default action decided.
    """

    action: PermissionAction
    rule: PermissionRule | None = None

    @property
    def reason(self) -> str | None:
        """The applying rule's reason, if a rule applied and gave one."""
        return self.rule.reason if self.rule is not None else None


def select_rule(rules: Iterable[PermissionRule], target: str, matches: Matcher) -> PermissionRule | None:
    """Find the rule that applies to ``target``: the highest priority among the matching ones, the first on a tie.

    Args:
        rules: The category's rules, in the order they were listed.
        target: The path, command or name being judged.
        matches: The pattern matcher for this category.

    Returns:
        The applying rule, or ``None`` when no rule matches or the target is blank.
    """
    if not target.strip():
        return None
    best: PermissionRule | None = None
    for rule in rules:
        if (best is None or rule.priority > best.priority) and matches(rule.pattern, target):
            best = rule
    return best


def evaluate_rules(
    rules: Iterable[PermissionRule], target: str, matches: Matcher, default_action: PermissionAction
) -> RuleOutcome:
    """Decide about ``target`` with one category's rules.

    Args:
        rules: The category's rules, in the order they were listed.
        target: The path, command or name being judged.
        matches: The pattern matcher for this category.
        default_action: The decision when no rule applies.

    Returns:
        The applying rule's action (and the rule), or the default action.
    """
    rule = select_rule(rules, target, matches)
    if rule is None:
        return RuleOutcome(action=default_action)
    return RuleOutcome(action=rule.action, rule=rule)


@lru_cache(maxsize=1024)
def _compile_glob(pattern: str) -> re.Pattern[str]:
    parts = [".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern]
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def glob_matches(pattern: str, text: str) -> bool:
    """Match a name or command glob against the whole of ``text``, case-insensitively.

    ``*`` matches any run of characters (including ``/`` and spaces), ``?`` exactly one; everything else is literal.

    Args:
        pattern: The glob.
        text: The tool name or simple command.

    Returns:
        Whether the glob covers all of ``text``.
    """
    return _compile_glob(pattern).fullmatch(text) is not None
