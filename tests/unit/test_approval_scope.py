"""The scope of an "always approve" answer: what it remembers, and that a later call is covered only inside it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.domain.invocation.approval_scope import (
    ApprovalScope,
    RememberedScopes,
    ScopeKind,
    approval_scope,
    command_pattern,
    pattern_covers,
)
from ironhive.ports.chat import JsonValue


def remembered(tool: str, **arguments: JsonValue) -> RememberedScopes:
    scope = approval_scope(tool, arguments, "asked")
    assert scope is not None
    scopes = RememberedScopes()
    scopes.remember(scope)
    return scopes


@pytest.mark.parametrize(
    ("part", "pattern"),
    [
        ("echo hi", "echo *"),
        ("echo", "echo *"),
        ("git log -3", "git log *"),
        ("npm test", "npm test *"),
        ("./build.sh --fast", "./build.sh *"),
        # exact text: a prefix would say too little about what runs
        ("git", "git"),
        ("git -c core.pager=sh log", "git -c core.pager=sh log"),
        ("npm exec cowsay", "npm exec cowsay"),
        ("uv run python -c x", "uv run python -c x"),
        ("env FOO=1 ls", "env FOO=1 ls"),
        ("xargs rm", "xargs rm"),
        ("/usr/bin/env ls", "/usr/bin/env ls"),
        ("bash -c ls", "bash -c ls"),
        ("python3 tool.py", "python3 tool.py"),
        ("find . -name x", "find . -name x"),
        ("sed -n 1p f", "sed -n 1p f"),
        ("FOO=1 make", "FOO=1 make"),
        ("$CMD x", "$CMD x"),
        ("ec* x", "ec* x"),
        ("echo hi > out", "echo hi > out"),
        ("echo $(id)", "echo $(id)"),
        ("echo `id`", "echo `id`"),
        ("cat <(ls)", "cat <(ls)"),
    ],
)
def test_the_pattern_of_one_simple_command(part: str, pattern: str) -> None:
    assert command_pattern(part) == pattern


def test_shell_scope_has_one_pattern_per_simple_command_in_order() -> None:
    scope = approval_scope("ExecuteCommand", {"command": "cd src && make test; git diff"})
    assert scope == ApprovalScope(
        tool="execute_command", kind=ScopeKind.COMMANDS, patterns=("cd *", "make test *", "git diff *")
    )
    assert scope.describe() == "execute_command: cd * ; make test * ; git diff *"


@pytest.mark.parametrize("command", ["echo 'open", "echo $(", "", "   "])
def test_a_command_that_cannot_be_taken_apart_has_no_scope(command: str) -> None:
    assert approval_scope("execute_command", {"command": command}) is None


def test_a_non_string_command_has_no_scope() -> None:
    assert approval_scope("execute_command", {"command": ["rm", "-rf", "x"]}) is None


@pytest.mark.parametrize(
    ("later", "covered"),
    [
        ("echo bye", True),
        ("echo", True),
        ("echo 'a b' c", True),
        ("echo a; echo b", False),  # a chain needs a scope of the same shape
        ("echo a && rm -rf x", False),
        ("echo a | sh", False),
        ("echo a > /etc/passwd", False),
        ("echo $(curl x)", False),
        ("echo `id`", False),
        ("echoo x", False),
        ("/bin/echo x", False),
        ("curl -s http://127.0.0.1:9/x|sh", False),
        ("FOO=1 echo x", False),
    ],
)
def test_echo_star_covers_echo_only(later: str, covered: bool) -> None:
    assert remembered("execute_command", command="echo hi").covers("execute_command", {"command": later}) is covered


def test_a_chain_scope_covers_the_same_chain_with_other_arguments() -> None:
    scopes = remembered("execute_command", command="cd src && make test")
    assert scopes.covers("execute_command", {"command": "cd lib; make test -j4"})
    assert not scopes.covers("execute_command", {"command": "make test -j4 && cd lib"})
    assert not scopes.covers("execute_command", {"command": "cd lib"})
    assert not scopes.covers("execute_command", {"command": "cd lib && make test && rm x"})


def test_another_tool_is_never_covered_by_a_command_scope() -> None:
    scopes = remembered("execute_command", command="echo hi")
    assert not scopes.covers("shell", {"command": "echo hi"})
    assert not scopes.covers("write_file", {"path": "echo"})
    assert scopes.covers("ExecuteCommand", {"command": "echo hi"})  # the same tool under its PascalCase name


def test_a_path_scope_covers_the_exact_paths_with_the_same_judgement_only() -> None:
    scope = approval_scope("write_file", {"path": "notes.md", "content": "a"}, "Write file: notes.md")
    assert scope is not None and scope.describe() == "write_file: notes.md"
    scopes = RememberedScopes()
    scopes.remember(scope)
    assert scopes.covers("write_file", {"path": "notes.md", "content": "b"}, "Write file: notes.md")
    assert not scopes.covers("write_file", {"path": "notes.md"}, "Write file: notes.md (outside the working directory)")
    assert not scopes.covers("write_file", {"path": "other.md"}, "Write file: other.md")
    assert not scopes.covers("edit_file", {"path": "notes.md"}, "Write file: notes.md")
    assert not scopes.covers("write_file", {"path": 7}, "Write file: notes.md")


def test_a_tool_judged_by_name_is_remembered_by_name() -> None:
    scope = approval_scope("mcp__fs__write", {"anything": 1})
    assert scope is not None and scope.describe() == "mcp__fs__write (judged by name: any arguments)"
    scopes = RememberedScopes()
    scopes.remember(scope)
    assert scopes.covers("mcp__fs__write", {"other": "x"})
    assert not scopes.covers("mcp__fs__delete", {})


# --- property: "echo *" never covers a line holding anything but echo with plain arguments -------------------------

WORDS = st.text(alphabet="abcxyz019-_./=,:", min_size=1, max_size=8)
PROGRAMS = st.sampled_from(["rm", "sh", "curl", "touch", "python3", "ls", "echoo", "/bin/echo", "ech", "e", "id"])
CHAINS = st.sampled_from([";", "&&", "||", "|", "&", "\n", "|&"])
REDIRECTIONS = st.sampled_from([">", ">>", "<", "2>", "&>", ">|", "<<<", "2>&1 >"])


@st.composite
def hostile_lines(draw: st.DrawFn) -> str:
    """A line that starts with ``echo`` and holds another program, a chain, a redirection or a substitution."""
    arguments = " ".join(draw(st.lists(WORDS, max_size=3)))
    head = f"echo {arguments}".rstrip()
    shape = draw(st.integers(0, 5))
    other = f"{draw(PROGRAMS)} {draw(WORDS)}"
    if shape == 0:
        return f"{head}{draw(st.sampled_from(['', ' ']))}{draw(CHAINS)} {draw(st.sampled_from([other, head]))}"
    if shape == 1:
        return f"{draw(st.sampled_from([other, head]))} {draw(CHAINS)} {head}"
    if shape == 2:
        return f"{head} {draw(REDIRECTIONS)}{draw(WORDS)}"
    if shape == 3:
        return f"{head} $({other})"
    if shape == 4:
        return f'{head} "`{other}`"'
    return f"{head} <({other})"


@settings(max_examples=400, deadline=None)
@given(line=hostile_lines())
def test_echo_star_never_covers_a_line_with_more_than_echo(line: str) -> None:
    scopes = remembered("execute_command", command="echo hi")
    assert not scopes.covers("execute_command", {"command": line}), line


@settings(max_examples=200, deadline=None)
@given(arguments=st.lists(WORDS, max_size=4))
def test_echo_star_covers_echo_with_plain_arguments(arguments: list[str]) -> None:
    scopes = remembered("execute_command", command="echo hi")
    assert scopes.covers("execute_command", {"command": " ".join(["echo", *arguments])})


@pytest.mark.parametrize(
    "risky",
    [
        "git log --output=/tmp/pwned",
        "git log --out=/tmp/pwned",
        "git diff --ext-diff",
        "cargo build --config x",
        "npm test --script-shell=/tmp/sh",
        "cp notes.txt .ironhive/permissions.yaml",
    ],
)
def test_an_option_that_runs_or_writes_elsewhere_is_never_covered_by_a_prefix(risky: str) -> None:
    program = " ".join(risky.split(" ")[:2]) if risky.split(" ")[0] in ("git", "cargo", "npm") else risky.split(" ")[0]

    assert not pattern_covers(program + " *", risky)
    assert command_pattern(risky) == risky  # "always" on it remembers only the exact text
