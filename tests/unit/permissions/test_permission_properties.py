"""Property tests: the splitter and the judgement never crash; a denied part is never carried by an allowed one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.domain.permissions.commands import ALWAYS_DENIED_PATTERNS, judge_command
from ironhive.domain.permissions.rules import DEFAULT_POLICY, PermissionAction, PermissionPolicy, PermissionRule
from ironhive.domain.permissions.shell import ShellParseError, split_shell_command

SHELLISH = st.text(
    alphabet=st.one_of(st.sampled_from(list(" \t\n;&|()<>{}$`'\"\\#=*!ab")), st.characters()), max_size=60
)

POLICY = PermissionPolicy(
    bash=(
        PermissionRule(pattern="git *", action=PermissionAction.ALLOW),
        PermissionRule(pattern="ls", action=PermissionAction.ALLOW),
        PermissionRule(pattern="ls *", action=PermissionAction.ALLOW),
        PermissionRule(pattern="echo *", action=PermissionAction.ALLOW),
        PermissionRule(pattern="rm -rf *", action=PermissionAction.DENY, priority=100),
        PermissionRule(pattern="sudo *", action=PermissionAction.DENY, priority=100),
    ),
    default_action=PermissionAction.ALLOW,  # the harshest setting for this property: only the rules stand in the way
)
ALLOWED = st.sampled_from(["git status", "ls", "ls -la src", "echo hi", "git log --oneline"])
DENIED = st.sampled_from(["rm -rf /tmp/x", "sudo ls", "rm -rf build", "sudo rm x"])
SEPARATORS = st.sampled_from([";", "&&", "||", "|", "\n", "&", "|&"])
SPACES = st.sampled_from(["", " ", "  ", "\t"])


def _quote_first_word(command: str, style: int) -> str:
    head, _, rest = command.partition(" ")
    quoted = [head, f"'{head}'", f'"{head}"', f"\\{head}", f"{head[0]}''{head[1:]}"][style]
    return f"{quoted} {rest}" if rest else quoted


@st.composite
def chained(draw: st.DrawFn) -> str:
    allowed = draw(ALLOWED)
    denied = _quote_first_word(draw(DENIED), draw(st.integers(0, 4)))
    left, right = draw(SPACES), draw(SPACES)
    shape = draw(st.integers(0, 8))
    if shape == 0:
        return f"{allowed}{left}{draw(SEPARATORS)}{right}{denied}"
    if shape == 1:
        return f"{denied}{left}{draw(SEPARATORS)}{right}{allowed}"
    if shape == 2:
        return f"{allowed} $({left}{denied}{right})"
    if shape == 3:
        return f"{allowed} `{left}{denied}{right}`"
    if shape == 4:
        return f'{allowed} "$({denied})"'
    if shape == 5:
        return f"{allowed} <({denied})"
    if shape == 6:
        return f"({allowed}{left};{right}{denied})"
    if shape == 7:
        return f"{{ {allowed}; {denied}; }}"
    return f"if {allowed}; then {denied}; fi"


@settings(max_examples=300, deadline=None)
@given(SHELLISH)
def test_splitter_returns_parts_or_raises_parse_error(text: str) -> None:
    try:
        parts = split_shell_command(text)
    except ShellParseError:
        return
    assert all(isinstance(part, str) and part.strip() == part and part for part in parts)


@settings(max_examples=300, deadline=None)
@given(SHELLISH)
def test_judgement_never_crashes_and_never_allows_an_always_denied_pattern(text: str) -> None:
    verdict = judge_command(POLICY, text)
    if any(pattern in text.lower() for pattern in ALWAYS_DENIED_PATTERNS):
        assert verdict.action == PermissionAction.DENY


@settings(max_examples=200, deadline=None)
@given(chained())
def test_an_allowed_part_never_carries_a_denied_one(command: str) -> None:
    assert judge_command(POLICY, command).action == PermissionAction.DENY
    assert judge_command(DEFAULT_POLICY, command).action != PermissionAction.ALLOW
