"""An untrusted project's permission rules only narrow: judged through the real ToolCallPolicy."""

from __future__ import annotations

from pathlib import Path

import pytest

from ironhive.adapters.config.trust import ProjectTrust, TrustStore
from ironhive.adapters.permissions.gitignore_matcher import GitIgnorePathMatcher
from ironhive.adapters.permissions.loader import load_permission_policy
from ironhive.adapters.permissions.narrowing import narrow
from ironhive.domain.permissions.policy import ToolCallPolicy
from ironhive.domain.permissions.rules import DEFAULT_POLICY, PermissionAction, PermissionPolicy, PermissionRule

ALLOW, DENY, ASK = PermissionAction.ALLOW, PermissionAction.DENY, PermissionAction.ASK

ALLOW_EVERYTHING = """\
permissions:
  default_action: allow
  ask_before_delete: false
  read_only_tools: ["*"]
  read: [{ pattern: "**", action: allow, priority: 9999 }]
  edit: [{ pattern: "**", action: allow, priority: 9999 }]
  bash: [{ pattern: "*", action: allow, priority: 9999 }]
  tools: [{ pattern: "*", action: allow, priority: 9999 }]
  mcp_tools: [{ pattern: "*", action: allow, priority: 9999 }]
"""


def rule(pattern: str, action: PermissionAction, priority: int = 0, reason: str | None = None) -> PermissionRule:
    return PermissionRule(pattern=pattern, action=action, priority=priority, reason=reason)


def verdict(policy: PermissionPolicy, root: Path, tool: str, **arguments: str) -> PermissionAction:
    return ToolCallPolicy(policy, root, GitIgnorePathMatcher()).evaluate(tool, dict(arguments)).action


CALLS = [
    ("read_file", {"path": "README.md"}),
    ("read_file", {"path": "secrets/key.txt"}),
    ("read_file", {"path": ".env"}),
    ("write_file", {"path": "src/a.py"}),
    ("write_file", {"path": "notes.txt"}),
    ("delete_file", {"path": "src/a.py"}),
    ("execute_command", {"command": "git status"}),
    ("execute_command", {"command": "rm -rf /"}),
    ("execute_command", {"command": "curl x | sh"}),
    ("mcp__srv__do_things", {}),
    ("mcp__srv__thing_get", {}),
    ("some_other_tool", {}),
]
_ORDER = {ALLOW: 0, ASK: 1, DENY: 2}


@pytest.mark.parametrize(("tool", "arguments"), CALLS, ids=[f"{tool}-{args}" for tool, args in CALLS])
def test_allow_everything_narrows_nothing_open(tmp_path: Path, tool: str, arguments: dict[str, str]) -> None:
    path = tmp_path / ".ironhive" / "permissions.yaml"
    path.parent.mkdir()
    path.write_text(ALLOW_EVERYTHING)
    untrusted = ProjectTrust(home=tmp_path / "home", store=TrustStore.for_home(tmp_path / "home"))
    policy = load_permission_policy(tmp_path, None, trust=untrusted)
    assert verdict(policy, tmp_path, tool, **arguments) == verdict(DEFAULT_POLICY, tmp_path, tool, **arguments)
    assert policy.read_only_tools == () and policy.ask_before_delete is True


def test_untrusted_deny_and_ask_rules_apply_and_never_loosen_a_user_deny(tmp_path: Path) -> None:
    untrusted = PermissionPolicy(
        read=(rule("README.md", DENY, -5, "Not for models"),),
        bash=(rule("git *", ASK), rule("rm *", ASK), rule("npm *", ALLOW, 10_000)),
        tools=(rule("read_file", ASK),),
        default_action=ALLOW,
    )
    narrowed = narrow(DEFAULT_POLICY, untrusted)
    assert verdict(narrowed, tmp_path, "read_file", path="README.md") == DENY
    assert verdict(narrowed, tmp_path, "read_file", path="docs/x.md") == ALLOW
    assert verdict(narrowed, tmp_path, "execute_command", command="git status") == ASK  # narrowed from allow
    assert verdict(narrowed, tmp_path, "execute_command", command="rm -rf build") == DENY  # the user's deny holds
    assert verdict(narrowed, tmp_path, "execute_command", command="npm test") == ALLOW  # allow rules add nothing
    assert narrowed.default_action == ASK  # the stricter default


@pytest.mark.parametrize(("tool", "arguments"), CALLS, ids=[f"{tool}-{args}" for tool, args in CALLS])
def test_narrowing_is_never_looser_than_the_users_policy(tmp_path: Path, tool: str, arguments: dict[str, str]) -> None:
    user = PermissionPolicy(
        bash=(rule("rm -rf *", DENY, 100), rule("rm -rf build", ALLOW, 200), rule("git *", ALLOW)),
        edit=(rule("src/**", ALLOW),),
        mcp_tools=(rule("*_get", ALLOW),),
        default_action=DENY,
    )
    untrusted = PermissionPolicy(
        bash=(rule("rm *", ASK), rule("curl *", DENY)), edit=(rule("src/a.py", ASK),), mcp_tools=(rule("*", ASK),)
    )
    narrowed = narrow(user, untrusted)
    judged = verdict(narrowed, tmp_path, tool, **arguments)
    assert _ORDER[judged] >= _ORDER[verdict(user, tmp_path, tool, **arguments)]  # never looser than the user's
    without_allows = PermissionPolicy(bash=untrusted.bash, edit=untrusted.edit, mcp_tools=untrusted.mcp_tools)
    if verdict(without_allows, tmp_path, tool, **arguments) is DENY:
        assert judged is DENY  # and every untrusted deny holds


def test_an_untrusted_ask_becomes_a_deny_under_a_deny_default(tmp_path: Path) -> None:
    user = PermissionPolicy(tools=(rule("list_directory", ALLOW),), default_action=DENY)
    narrowed = narrow(user, PermissionPolicy(tools=(rule("list_*", ASK), rule("other", ASK))))
    assert verdict(narrowed, tmp_path, "list_directory", path=".") == DENY
    assert verdict(narrowed, tmp_path, "other") == DENY


def test_a_trusted_file_is_the_policy_and_an_edit_makes_it_narrow_only(tmp_path: Path) -> None:
    path = tmp_path / ".ironhive" / "permissions.yaml"
    path.parent.mkdir()
    path.write_text(ALLOW_EVERYTHING)
    home = tmp_path / "home"
    trust = ProjectTrust(home=home, store=TrustStore.for_home(home))
    TrustStore.for_home(home).trust(path)
    assert load_permission_policy(tmp_path, None, trust=trust).default_action == ALLOW
    assert verdict(load_permission_policy(tmp_path, None, trust=trust), tmp_path, "write_file", path="x") == ALLOW

    path.write_text(ALLOW_EVERYTHING + "# the model added a line\n")
    policy = load_permission_policy(tmp_path, None, trust=trust)
    assert verdict(policy, tmp_path, "write_file", path="x") == ASK


def test_an_untrusted_project_config_section_narrows_the_users_section(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / ".ironhive").mkdir()
    (tmp_path / ".ironhive" / "config.yaml").write_text(
        "permissions:\n  defaultAction: allow\n  bash:\n    - {pattern: 'git push*', action: deny}\n"
    )
    user_section = {"bash": [{"pattern": "git *", "action": "allow"}], "defaultAction": "ask"}
    trust = ProjectTrust(home=home, store=TrustStore.for_home(home))
    policy = load_permission_policy(tmp_path, user_section, trust=trust)
    assert verdict(policy, tmp_path, "execute_command", command="git push origin") == DENY
    assert verdict(policy, tmp_path, "execute_command", command="git status") == ALLOW
    assert policy.default_action == ASK
