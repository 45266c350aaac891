"""Loading the permission policy: file formats, the config.yaml section, precedence and every error message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ironhive.adapters.config.trust import ProjectTrust, TrustStore
from ironhive.adapters.permissions.loader import load_permission_file, load_permission_policy
from ironhive.domain.errors import ConfigurationError
from ironhive.domain.permissions.rules import DEFAULT_POLICY, PermissionAction, PermissionPolicy, PermissionRule

ALLOW, DENY, ASK = PermissionAction.ALLOW, PermissionAction.DENY, PermissionAction.ASK

README_YAML = """\
permissions:
  default_action: ask
  ask_before_delete: true
  read:
    - { pattern: "**/*", action: allow }
    - { pattern: "**/secrets/**", action: deny, priority: 20, reason: "Protected directory" }
  bash:
    - { pattern: "git *", action: allow }
    - { pattern: "rm -rf *", action: deny, priority: 100 }
  tools:
    - { pattern: "advisor", action: allow, reason: "Read-only" }
"""

README_POLICY = PermissionPolicy(
    read=(
        PermissionRule(pattern="**/*", action=ALLOW),
        PermissionRule(pattern="**/secrets/**", action=DENY, priority=20, reason="Protected directory"),
    ),
    bash=(PermissionRule(pattern="git *", action=ALLOW), PermissionRule(pattern="rm -rf *", action=DENY, priority=100)),
    tools=(PermissionRule(pattern="advisor", action=ALLOW, reason="Read-only"),),
)


def trusted_policy(root: Path, section: Any) -> PermissionPolicy:
    """The policy with the project's files trusted: these tests are about formats and precedence (the untrusted
    case is in test_untrusted_permissions.py)."""
    home = root / "home"
    return load_permission_policy(
        root, section, trust=ProjectTrust(home=home, store=TrustStore.for_home(home), trust_all=True)
    )


def write(root: Path, name: str, text: str) -> Path:
    path = root / ".ironhive" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- formats ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["permissions.yaml", "permissions.yml"])
def test_readme_yaml_example_loads(tmp_path: Path, name: str) -> None:
    write(tmp_path, name, README_YAML)
    assert trusted_policy(tmp_path, None) == README_POLICY


def test_yaml_with_every_key(tmp_path: Path) -> None:
    write(
        tmp_path,
        "permissions.yaml",
        """\
permissions:
  read: [{pattern: "a", action: Allow}]
  edit: [{pattern: "b"}]
  bash: []
  external_directory: [{pattern: "/tmp/**", action: DENY, reason: "no tmp"}]
  mcp_tools: [{pattern: "*_get", action: allow}]
  tools: [{pattern: "web_*", action: deny, priority: -3}]
  read_only_tools: [peek_tab, "list_*"]
  ask_before_delete: false
  default_action: Deny
""",
    )
    assert trusted_policy(tmp_path, None) == PermissionPolicy(
        read=(PermissionRule(pattern="a", action=ALLOW),),
        edit=(PermissionRule(pattern="b", action=ASK),),  # action defaults to ask
        external_directory=(PermissionRule(pattern="/tmp/**", action=DENY, reason="no tmp"),),
        mcp_tools=(PermissionRule(pattern="*_get", action=ALLOW),),
        tools=(PermissionRule(pattern="web_*", action=DENY, priority=-3),),
        read_only_tools=("peek_tab", "list_*"),
        ask_before_delete=False,
        default_action=DENY,
    )


def test_json_with_comments_trailing_commas_and_any_key_case(tmp_path: Path) -> None:
    write(
        tmp_path,
        "permissions.json",
        """\
// project permissions
{
  "Permissions": {
    /* reads */
    "READ": [
      { "Pattern": "**/*", "Action": "Allow", },
      { "pattern": "**/secrets/**", "action": "deny", "priority": 20, "reason": "Protected directory" },
    ],
    "bash": [ { "pattern": "git *", "action": "allow" }, { "pattern": "rm -rf *", "action": "deny", "priority": 100 } ],
    "Tools": [ { "pattern": "advisor", "action": "allow", "reason": "Read-only" } ], // trailing comment
    "defaultAction": "ask",
    "ask_before_delete": true,
  },
}
""",
    )
    assert trusted_policy(tmp_path, None) == README_POLICY


def test_json_accepts_camel_case_section_keys(tmp_path: Path) -> None:
    write(
        tmp_path,
        "permissions.json",
        '{"permissions": {"externalDirectory": [{"pattern": "/opt/**", "action": "allow"}],'
        ' "mcpTools": [], "readOnlyTools": ["x"], "askBeforeDelete": false}}',
    )
    policy = trusted_policy(tmp_path, None)
    assert policy.external_directory == (PermissionRule(pattern="/opt/**", action=ALLOW),)
    assert policy.read_only_tools == ("x",)
    assert policy.ask_before_delete is False


def test_json_strings_containing_comment_markers_are_kept(tmp_path: Path) -> None:
    write(
        tmp_path,
        "permissions.json",
        r'{"permissions": {"bash": [{"pattern": "curl http://x/* ,]", "reason": "a \" // b /* c */,}"}]}}',
    )
    (rule,) = trusted_policy(tmp_path, None).bash
    assert rule.pattern == "curl http://x/* ,]"
    assert rule.reason == 'a " // b /* c */,}'


def test_bom_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, "permissions.json", "")
    path.write_bytes(b"\xef\xbb\xbf" + b'{"permissions": {}}')
    assert load_permission_file(path) == PermissionPolicy()


# -- precedence and complete policies ---------------------------------------------------------------------------


def test_no_file_and_no_section_gives_the_defaults(tmp_path: Path) -> None:
    assert trusted_policy(tmp_path, None) is DEFAULT_POLICY


def test_yaml_beats_yml_beats_json_beats_config_section(tmp_path: Path) -> None:
    section = {"defaultAction": "allow"}
    write(tmp_path, "permissions.json", '{"permissions": {"default_action": "deny"}}')
    assert trusted_policy(tmp_path, section).default_action == DENY
    write(tmp_path, "permissions.yml", "permissions: {default_action: ask, read_only_tools: [yml]}")
    assert trusted_policy(tmp_path, section).read_only_tools == ("yml",)
    write(tmp_path, "permissions.yaml", "permissions: {read_only_tools: [yaml]}")
    assert trusted_policy(tmp_path, section).read_only_tools == ("yaml",)


def test_config_section_is_used_without_a_file(tmp_path: Path) -> None:
    section: dict[str, Any] = {
        "read": [{"pattern": "**/*", "action": "allow"}],
        "externalDirectory": [{"pattern": "/data/**", "action": "allow", "priority": 2}],
        "mcpTools": [{"pattern": "*", "action": "deny"}],
        "readOnlyTools": ["peek"],
        "askBeforeDelete": False,
        "defaultAction": "deny",
    }
    assert trusted_policy(tmp_path, section) == PermissionPolicy(
        read=(PermissionRule(pattern="**/*", action=ALLOW),),
        external_directory=(PermissionRule(pattern="/data/**", action=ALLOW, priority=2),),
        mcp_tools=(PermissionRule(pattern="*", action=DENY),),
        read_only_tools=("peek",),
        ask_before_delete=False,
        default_action=DENY,
    )


def test_config_section_is_a_complete_policy(tmp_path: Path) -> None:
    policy = trusted_policy(tmp_path, {"bash": [{"pattern": "git *", "action": "allow"}]})
    assert policy.bash == (PermissionRule(pattern="git *", action=ALLOW),)
    assert policy.read == () and policy.edit == () and policy.tools == () and policy.mcp_tools == ()
    assert policy.ask_before_delete is True
    assert policy.default_action == ASK
    assert trusted_policy(tmp_path, {}) == PermissionPolicy()


def test_a_file_is_a_complete_policy_too(tmp_path: Path) -> None:
    write(tmp_path, "permissions.yaml", "permissions:\n  bash: [{pattern: 'ls', action: allow}]\n")
    policy = trusted_policy(tmp_path, None)
    assert policy.read == () and policy.tools == ()


# -- errors -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("permissions.yaml", "permissions:\n  read: [\n", "YAML syntax error at line 3, column 1"),
        ("permissions.yaml", "permissions:\n\tread: []\n", "YAML syntax error at line 2"),
        ("permissions.yaml", "", "no top-level 'permissions' mapping"),
        ("permissions.yaml", "read: []\n", "no top-level 'permissions' mapping"),
        ("permissions.yaml", "- a\n- b\n", "no top-level 'permissions' mapping"),
        ("permissions.yaml", "permissions:\n", "'permissions' must be a mapping, not empty"),
        ("permissions.yaml", "permissions: [a]\n", "'permissions' must be a mapping, not a list"),
        ("permissions.yaml", "permissions: {}\nextra: 1\n", "unknown top-level key 'extra'"),
        ("permissions.yaml", "permissions:\n  raed: []\n", "unknown key 'raed' in permissions"),
        (
            "permissions.yaml",
            "permissions:\n  externalDirectory: []\n",
            "unknown key 'externalDirectory' in permissions",
        ),
        (
            "permissions.yaml",
            "permissions:\n  read: [{pattern: a, acton: allow}]\n",
            "unknown key 'acton' in permissions.read[0]",
        ),
        (
            "permissions.yaml",
            "permissions:\n  read: [{pattern: a, action: alow}]\n",
            "permissions.read[0].action: 'alow' is not an action (allow, deny or ask)",
        ),
        (
            "permissions.yaml",
            "permissions:\n  default_action: maybe\n",
            "permissions.default_action: 'maybe' is not an action (allow, deny or ask)",
        ),
        ("permissions.yaml", "permissions:\n  bash: [{action: deny}]\n", "the rule permissions.bash[0] has no pattern"),
        (
            "permissions.yaml",
            "permissions:\n  bash: [{pattern: '  '}]\n",
            "the rule permissions.bash[0] has no pattern",
        ),
        (
            "permissions.yaml",
            "permissions:\n  bash: [{pattern: x, priority: high}]\n",
            "permissions.bash[0].priority: Input should be a valid integer",
        ),
        ("permissions.yaml", "permissions:\n  bash: [git status]\n", "permissions.bash[0] must be a mapping"),
        ("permissions.yaml", "permissions:\n  bash: {pattern: x}\n", "permissions.bash: Input should be a valid list"),
        (
            "permissions.yaml",
            "permissions:\n  ask_before_delete: sometimes\n",
            "permissions.ask_before_delete: Input should be a valid boolean",
        ),
        (
            "permissions.yaml",
            "permissions:\n  read: [{pattern: '!src/**', action: deny}]\n",
            "permissions.read[0].pattern '!src/**' is not a valid path pattern",
        ),
        ("permissions.json", '{"permissions": {"read": [}', "JSON syntax error at line 1, column 27"),
        (
            "permissions.json",
            '{"permissions": {} /* open',
            "JSON syntax error at line 1, column 27: unexpected end of input",
        ),
        ("permissions.json", '{"perms": {}}', "no top-level 'permissions' mapping"),
        ("permissions.json", "[]", "no top-level 'permissions' mapping"),
        ("permissions.json", '{"permissions": {"Read": [], "read": []}}', "duplicate key 'read' in permissions"),
        ("permissions.json", '{"permissions": {"bogus": true}}', "unknown key 'bogus' in permissions"),
        (
            "permissions.json",
            '{"permissions": {"read": [{"pattern": "a", "action": "yes"}]}}',
            "permissions.read[0].action: 'yes' is not an action (allow, deny or ask)",
        ),
    ],
)
def test_file_errors_name_the_file_and_the_problem(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigurationError) as caught:
        trusted_policy(tmp_path, {"defaultAction": "allow"})  # a broken file never falls back
    assert f"permission file '{path}'" in str(caught.value)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"external_directory": []}, "unknown key 'external_directory' in permissions"),
        ({"read": [{"action": "allow"}]}, "the rule permissions.read[0] has no pattern"),
        ({"bash": [{"pattern": "x", "action": "nope"}]}, "'nope' is not an action"),
        ({"defaultAction": 3}, "permissions.defaultAction: Input should be a valid string"),
        ({"readOnlyTools": "peek"}, "permissions.readOnlyTools: Input should be a valid list"),
        ({"externalDirectory": [{"pattern": "[z-a]"}]}, "permissions.externalDirectory[0].pattern '[z-a]'"),
        (["read"], "'permissions' must be a mapping, not a list"),
    ],
)
def test_config_section_errors_name_the_section(tmp_path: Path, section: Any, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        trusted_policy(tmp_path, section)
    assert str(caught.value).startswith("Invalid config.yaml permissions section: ")
    assert message in str(caught.value)


def test_unreadable_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / ".ironhive" / "permissions.yaml").mkdir(parents=True)
    with pytest.raises(ConfigurationError, match=r"Refusing to read .*permissions\.yaml: it is a directory"):
        trusted_policy(tmp_path, None)


def test_several_problems_are_reported_together(tmp_path: Path) -> None:
    write(tmp_path, "permissions.yaml", "permissions:\n  raed: []\n  bash: [{pattern: x, action: nope}]\n")
    with pytest.raises(ConfigurationError) as caught:
        trusted_policy(tmp_path, None)
    assert "unknown key 'raed'" in str(caught.value)
    assert "'nope' is not an action" in str(caught.value)
