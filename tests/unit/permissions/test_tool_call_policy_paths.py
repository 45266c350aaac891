"""ToolCallPolicy with a recording matcher: how paths are resolved before matching, and which category judges a call."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ironhive.domain.permissions.policy import ToolCallPolicy, normalize_tool_name
from ironhive.domain.permissions.rules import PermissionAction, PermissionPolicy, PermissionRule
from ironhive.ports.matching import PathPatternMatcher

ALLOW, DENY, ASK = PermissionAction.ALLOW, PermissionAction.DENY, PermissionAction.ASK


class RecordingMatcher:
    """Matches when the path equals the pattern (case-insensitive, trailing "/" ignored); records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def matches(self, pattern: str, relative_path: str) -> bool:
        self.calls.append((pattern, relative_path))
        return pattern == "*" or pattern.lower() == relative_path.lower().rstrip("/")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("s")
    return root


def make(project: Path, **categories: tuple[PermissionRule, ...]) -> tuple[ToolCallPolicy, RecordingMatcher]:
    matcher = RecordingMatcher()
    policy = PermissionPolicy(**categories)  # type: ignore[arg-type]
    return ToolCallPolicy(policy, project, matcher), matcher


def any_rule(action: PermissionAction, reason: str | None = None) -> tuple[PermissionRule, ...]:
    return (PermissionRule(pattern="*", action=action, reason=reason),)


def test_the_recording_matcher_fits_the_port() -> None:
    assert isinstance(RecordingMatcher(), PathPatternMatcher)


@pytest.mark.parametrize(
    ("path", "matched"),
    [
        ("src/a.py", "src/a.py"),
        ("./src/../src/./a.py", "src/a.py"),
        ("src//a.py", "src/a.py"),
        ("src", "src/"),  # an existing directory is marked with a trailing slash
        ("new/file.txt", "new/file.txt"),
    ],
)
def test_paths_inside_are_matched_resolved_and_relative(project: Path, path: str, matched: str) -> None:
    policy, matcher = make(project, read=(PermissionRule(pattern="x", action=ALLOW),))
    policy.evaluate("read_file", {"path": path})
    assert matcher.calls == [("x", matched)]


def test_absolute_path_inside_is_judged_relative(project: Path) -> None:
    policy, matcher = make(project, read=(PermissionRule(pattern="x", action=ALLOW),))
    policy.evaluate("read_file", {"path": str(project / "src" / "a.py")})
    assert matcher.calls == [("x", "src/a.py")]


@pytest.mark.parametrize("path", ["../outside/secret.txt", "src/../../outside/secret.txt"])
def test_traversal_goes_to_external_directory_rules_with_the_absolute_path(project: Path, path: str) -> None:
    policy, matcher = make(
        project,
        read=any_rule(ALLOW),
        external_directory=(PermissionRule(pattern="x", action=ALLOW),),
    )
    verdict = policy.evaluate("read_file", {"path": path})
    expected = (project.parent / "outside" / "secret.txt").resolve().as_posix()
    assert matcher.calls == [("x", expected)]
    assert verdict.action == ASK  # no external rule matched: the default action
    assert verdict.reason == f"Read file: {path} (outside the working directory)"


def test_symlinked_file_pointing_outside_is_external(project: Path) -> None:
    (project / "link.txt").symlink_to(project.parent / "outside" / "secret.txt")
    policy, matcher = make(project, read=any_rule(ALLOW), external_directory=any_rule(DENY, "Outside"))
    verdict = policy.evaluate("read_file", {"path": "link.txt"})
    assert (verdict.action, verdict.reason) == (DENY, "Outside")
    assert matcher.calls[0][1] == (project.parent / "outside" / "secret.txt").resolve().as_posix()


def test_working_directory_given_through_a_symlink_is_resolved(project: Path) -> None:
    alias = project.parent / "alias"
    alias.symlink_to(project, target_is_directory=True)
    policy, _ = make(alias, read=(PermissionRule(pattern="src/a.py", action=DENY),))
    assert policy.evaluate("read_file", {"path": "src/a.py"}).action == DENY
    assert policy.evaluate("read_file", {"path": str(project / "src" / "a.py")}).action == DENY
    assert policy.root == os.path.realpath(project)


def test_home_relative_path_counts_as_the_home_directory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(project.parent / "outside"))
    policy, _ = make(project, read=any_rule(ALLOW))
    assert policy.evaluate("read_file", {"path": "~/secret.txt"}).action == ASK


def test_path_with_a_nul_byte_is_judged_as_external(project: Path) -> None:
    policy, _ = make(project, read=any_rule(ALLOW))
    assert policy.evaluate("read_file", {"path": "src/\x00a.py"}).action == ASK


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("ReadFile", "read_file"),
        ("READFILE", "read_file"),
        ("Read_File", "read_file"),
        ("WriteFile", "write_file"),
        ("EditFile", "edit_file"),
        ("DeleteFile", "delete_file"),
        ("ExecuteCommand", "execute_command"),
        ("GlobFiles", "glob_files"),
        ("GrepFiles", "grep_files"),
        ("ListDirectory", "list_directory"),
        ("ManageTodo", "manage_todo"),
        ("Shell", "shell"),
        ("advisor", "advisor"),
        ("mcp__Server__Tool", "mcp__Server__Tool"),
    ],
)
def test_tool_name_normalisation(name: str, canonical: str) -> None:
    assert normalize_tool_name(name) == canonical


def test_camel_case_argument_spellings_are_judged_too(project: Path) -> None:
    # the built-in tools accept "Path" for "path"; a call must not slip past the path rules by spelling it so
    policy, _ = make(project, read=(PermissionRule(pattern="src/a.py", action=DENY, reason="No"),))
    verdict = policy.evaluate("read_file", {"Path": "src/a.py"})
    assert (verdict.action, verdict.reason) == (DENY, "No")
    both = policy.evaluate("read_file", {"path": "other.txt", "PATH": "src/a.py"})
    assert both.action == DENY


def test_non_string_path_is_not_taken_as_no_path(project: Path) -> None:
    policy, _ = make(project, read=any_rule(ALLOW))
    assert policy.evaluate("read_file", {"path": ["src/a.py"]}).action == ASK
    assert policy.evaluate("read_file", {}).action == ALLOW
    assert policy.evaluate("read_file", None).action == ALLOW


def test_mcp_tools_are_judged_by_mcp_rules_and_others_by_tool_rules(project: Path) -> None:
    policy, _ = make(
        project,
        mcp_tools=(PermissionRule(pattern="mcp__fs__*", action=DENY, reason="MCP fs"),),
        tools=(PermissionRule(pattern="web_*", action=ALLOW),),
    )
    assert policy.evaluate("mcp__fs__write", {}).reason == "MCP fs"
    assert policy.evaluate("mcp__other__x", {}).reason == "MCP tool: mcp__other__x"
    assert policy.evaluate("web_search", {}).action == ALLOW
    assert policy.evaluate("shell_out", {}).reason == "Tool: shell_out"


def test_read_only_tools_of_the_policy(project: Path) -> None:
    policy = ToolCallPolicy(PermissionPolicy(read_only_tools=("peek_*",)), project, RecordingMatcher())
    assert policy.is_read_only_tool("peek_tab")
    assert policy.is_read_only_tool("read_file")
    assert not policy.is_read_only_tool("poke_tab")
