"""Narrowing a policy by an untrusted one: its deny and ask rules apply, nothing of it can widen the user's policy.

The engine lets the single highest-priority matching rule decide, so "the stricter of two policies" is written as one
policy with the rules in priority bands (each band above every priority of the bands below it):

3. the untrusted deny rules: they beat everything, so whatever they match is denied;
2. the user's deny rules, lifted here only in a category where the untrusted policy has ask rules (so an untrusted ask
   never turns one of the user's denies into a question);
1. the untrusted ask rules: above every allow rule of the user's;
0. the user's other rules, in their own order.

Untrusted allow rules, ``read_only_tools`` (they would let more run in Planning mode) and a default that is looser
than the user's are ignored. The default is the stricter of the two; ``ask_before_delete`` holds when either asks.
When the user's default is deny, an untrusted ask rule becomes a deny (a question would be looser than the default
it may fall back to). Lifting the user's deny rules can only make a call stricter than either policy alone would,
never looser: the result never allows what the user's policy does not.
"""

from __future__ import annotations

from dataclasses import replace

from ironhive.domain.permissions.rules import PermissionAction, PermissionPolicy, PermissionRule

_STRICTNESS = {PermissionAction.ALLOW: 0, PermissionAction.ASK: 1, PermissionAction.DENY: 2}


def stricter(first: PermissionAction, second: PermissionAction) -> PermissionAction:
    """The stricter of two actions (deny > ask > allow)."""
    return first if _STRICTNESS[first] >= _STRICTNESS[second] else second


def narrow(base: PermissionPolicy, untrusted: PermissionPolicy) -> PermissionPolicy:
    """``base`` with the deny and ask rules of ``untrusted`` added so that they can only make it stricter.

    Args:
        base: The user's (trusted) policy.
        untrusted: A policy from a file that is not trusted.

    Returns:
        A policy that never allows what ``base`` does not.
    """
    default = base.default_action
    return replace(
        base,
        read=_narrow_rules(base.read, untrusted.read, default),
        edit=_narrow_rules(base.edit, untrusted.edit, default),
        bash=_narrow_rules(base.bash, untrusted.bash, default),
        external_directory=_narrow_rules(base.external_directory, untrusted.external_directory, default),
        mcp_tools=_narrow_rules(base.mcp_tools, untrusted.mcp_tools, default),
        tools=_narrow_rules(base.tools, untrusted.tools, default),
        ask_before_delete=base.ask_before_delete or untrusted.ask_before_delete,
        default_action=stricter(default, untrusted.default_action),
    )


def _narrow_rules(
    base: tuple[PermissionRule, ...], untrusted: tuple[PermissionRule, ...], base_default: PermissionAction
) -> tuple[PermissionRule, ...]:
    denies = [rule for rule in untrusted if rule.action is PermissionAction.DENY]
    asks = [rule for rule in untrusted if rule.action is PermissionAction.ASK]
    if base_default is PermissionAction.DENY:
        denies += [replace(rule, action=PermissionAction.DENY) for rule in asks]
        asks = []
    if not denies and not asks:
        return base
    priorities = [rule.priority for rule in (*base, *untrusted)]
    width = max(abs(priority) for priority in priorities) * 2 + 1

    def banded(rule: PermissionRule, band: int) -> PermissionRule:
        return replace(rule, priority=band * width + rule.priority)

    lifted = bool(asks)
    rules = [banded(rule, 3) for rule in denies]
    rules += [banded(rule, 2 if lifted and rule.action is PermissionAction.DENY else 0) for rule in base]
    rules += [banded(rule, 1) for rule in asks]
    return tuple(rules)
