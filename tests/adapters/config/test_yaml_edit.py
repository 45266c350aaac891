"""Editing one key of a YAML file keeps every other line: comments, order, quotes, blank lines, indentation."""

from __future__ import annotations

import difflib
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.config.yaml_edit import YamlDocument

TWO_SPACES = """\
# ironhive configuration
# (a header of two lines)

openai:  # the paid provider
  apiKey: 'sk-abc'   # quoted on purpose
  # the model to use
  model: gpt-4o
  endpoint: "https://api.example.com/v1"

# Anthropic, for later
anthropic:
  model: claude-x
compaction:
  enabled: true
  targetRatio: 0.5
skills:
  roots:
    - one
    - two   # second root
  tags: [a, b]   # a flow list
# the end of the file
"""

FOUR_SPACES = """\
openai:
    apiKey: sk-1    # key
    model: gpt   # model

    # blank line above
compaction:
    enabled: false
# tail
"""

TEMPLATES = (TWO_SPACES, FOUR_SPACES)

SCALAR_KEYS = {
    TWO_SPACES: [
        ("openai", "apiKey"),
        ("openai", "model"),
        ("openai", "endpoint"),
        ("anthropic", "model"),
        ("compaction", "enabled"),
        ("compaction", "targetRatio"),
    ],
    FOUR_SPACES: [("openai", "apiKey"), ("openai", "model"), ("compaction", "enabled")],
}

names = st.from_regex(r"[a-z][a-zA-Z0-9]{0,11}", fullmatch=True)
TRICKY_TEXT = (
    "yes",
    "on",
    "No",
    "null",
    "~",
    "0x1F",
    "1_000",
    "012",
    "1:20",
    "2001-01-01",
    ".5",
    "+1",
    "a: b",
    "#x",
    "-",
    "? x",
    "",
    " lead",
    "multi\nline",
    "\t",
    "\u2028",
    "\x85",
    "'quoted'",
    '"dq"',
    "[a]",
)
"""Text that YAML 1.1 (the reader) and YAML 1.2 (ruamel) read differently, or that a plain scalar cannot hold."""

scalars = st.one_of(
    st.sampled_from(TRICKY_TEXT),
    st.sampled_from((1e16, 1e-7, -0.0, 10**20, -5)),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=30),
    st.integers(-(10**12), 10**12),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
)


def opcodes(before: str, after: str) -> list[tuple[str, list[str], list[str]]]:
    """The changed line groups of ``after`` against ``before``: (kind, old lines, new lines)."""
    old, new = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    return [(tag, old[i1:i2], new[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def same_value(first: Any, second: Any) -> bool:
    return bool(type(first) is type(second) and first == second)


def comment_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("#") or not line.strip()]


@settings(max_examples=60, deadline=None)
@given(template=st.sampled_from(TEMPLATES), data=st.data(), value=scalars)
def test_setting_an_existing_key_changes_only_its_own_line(template: str, data: st.DataObject, value: Any) -> None:
    path = data.draw(st.sampled_from(SCALAR_KEYS[template]))
    document = YamlDocument(template)
    document.set_key(list(path), value)
    text = document.text()
    expected = yaml.safe_load(template)
    expected[path[0]][path[1]] = value
    loaded = yaml.safe_load(text)
    assert loaded == expected
    assert same_value(loaded[path[0]][path[1]], value)
    changes = opcodes(template, text)
    if not changes:  # the same value written again
        return
    ((kind, old, new),) = changes
    assert kind == "replace" and len(old) == 1 and len(new) == 1
    assert new[0].startswith(old[0].split(":", 1)[0] + ":")  # the key and its indentation
    if " #" in old[0]:  # its end-of-line comment stays
        assert new[0].endswith(old[0][old[0].index(" #") :].strip())


@settings(max_examples=60, deadline=None)
@given(template=st.sampled_from(TEMPLATES), data=st.data(), value=scalars)
def test_a_new_key_is_one_inserted_line_and_every_other_line_stays(
    template: str, data: st.DataObject, value: Any
) -> None:
    section = data.draw(st.sampled_from(sorted({section for section, _ in SCALAR_KEYS[template]})))
    original = yaml.safe_load(template)
    key = data.draw(names.filter(lambda name: name not in original[section]))
    document = YamlDocument(template)
    document.set_key([section, key], value)
    text = document.text()
    expected = yaml.safe_load(template)
    expected[section][key] = value
    assert yaml.safe_load(text) == expected
    ((kind, old, new),) = opcodes(template, text)
    assert (kind, old, len(new)) == ("insert", [], 1)
    lines = text.splitlines()
    at = lines.index(new[0])
    assert lines[at - 1] == last_item_line(template, section)  # right after the section's last item
    indent = len(lines[at - 1]) - len(lines[at - 1].lstrip())
    assert new[0].startswith(" " * indent + key + ":")


def last_item_line(template: str, section: str) -> str:
    """The last line of ``section``'s block that is not a comment or blank."""
    lines = template.splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"{section}:")))
    found = lines[start]
    for line in lines[start + 1 :]:
        if line.strip() and not line.startswith(" ") and not line.startswith("#"):
            break
        if line.strip() and not line.lstrip().startswith("#"):
            found = line
    return found


@settings(max_examples=40, deadline=None)
@given(template=st.sampled_from(TEMPLATES), path=st.lists(names, min_size=1, max_size=3), value=scalars)
def test_a_new_section_is_added_as_its_own_lines_and_the_rest_stays(template: str, path: list[str], value: Any) -> None:
    original = yaml.safe_load(template)
    if path[0] in original:
        path = ["new" + path[0][:1].upper() + path[0][1:], *path[1:]]
    document = YamlDocument(template)
    document.set_key(path, value)
    text = document.text()
    expected: Any = value
    for segment in reversed(path):
        expected = {segment: expected}
    assert yaml.safe_load(text) == {**original, **expected}
    ((kind, old, new),) = opcodes(template, text)
    assert (kind, old, len(new)) == ("insert", [], len(path))
    assert new[0] == f"{path[0]}:" if len(path) > 1 else new[0].startswith(f"{path[0]}:")
    assert text.rstrip().endswith(template.rstrip().splitlines()[-1])  # the last comment stays last


@pytest.mark.parametrize("template", TEMPLATES)
def test_removing_any_key_keeps_every_comment_and_blank_line_of_the_rest(template: str) -> None:
    for section, key in SCALAR_KEYS[template]:
        document = YamlDocument(template)
        assert document.delete_key([section, key])
        text = document.text()
        expected = yaml.safe_load(template)
        del expected[section][key]
        if not expected[section]:
            del expected[section]
        assert yaml.safe_load(text) == expected, (section, key)
        for kind, old, new in opcodes(template, text):
            assert (kind, new) == ("delete", []), (section, key, text)
            assert all(not line.lstrip().startswith("#") and line.strip() for line in old), (section, key, old)
        assert comment_lines(text) == comment_lines(template), (section, key)


@pytest.mark.parametrize("template", TEMPLATES)
def test_removing_a_whole_section_keeps_the_comments_around_it(template: str) -> None:
    for section in yaml.safe_load(template):
        document = YamlDocument(template)
        assert document.delete_key([section])
        text = document.text()
        expected = yaml.safe_load(template)
        del expected[section]
        assert (yaml.safe_load(text) or {}) == expected
        for kind, _, new in opcodes(template, text):
            assert (kind, new) == ("delete", []), (section, text)
        outside = [line for line in comment_lines(template) if not line.startswith(" ")]
        assert [line for line in comment_lines(text) if not line.startswith(" ")] == outside, (section, text)


def test_removing_the_last_key_of_a_section_removes_the_section_and_keeps_the_comment_before_the_next() -> None:
    document = YamlDocument(TWO_SPACES)
    assert document.delete_key(["anthropic", "model"])
    text = document.text()
    assert "anthropic" not in text
    assert "# Anthropic, for later\ncompaction:" in text


def test_a_missing_key_is_not_removed() -> None:
    document = YamlDocument(TWO_SPACES)
    assert not document.delete_key(["openai", "nothing"])
    assert not document.delete_key(["nothing", "model"])
    assert not document.delete_key(["openai", "model", "deeper"])
    assert document.text() == TWO_SPACES


def test_a_list_value_replacing_a_block_keeps_the_comment_after_it() -> None:
    document = YamlDocument(TWO_SPACES)
    document.set_key(["skills", "roots"], ["x", "y", "z"])
    text = document.text()
    assert yaml.safe_load(text)["skills"]["roots"] == ["x", "y", "z"]
    assert text.endswith("  tags: [a, b]   # a flow list\n# the end of the file\n")
    assert "    - x\n    - y\n    - z\n" in text  # the file's own list indentation


def test_setting_below_a_value_is_refused_naming_the_value() -> None:
    document = YamlDocument(TWO_SPACES)
    with pytest.raises(ValueError, match=r"^openai\.model$"):
        document.set_key(["openai", "model", "name"], "x")


def test_a_file_of_comments_only_keeps_them_above_the_first_key() -> None:
    header = "# ironhive configuration\n#   ironhive set openai.apiKey sk-...\n"
    document = YamlDocument(header)
    document.set_key(["openai", "model"], "gpt")
    assert document.text() == header + "openai:\n  model: gpt\n"


def test_an_empty_file_gets_the_key() -> None:
    document = YamlDocument("")
    document.set_key(["a"], 1)
    assert document.text() == "a: 1\n"
    assert document.delete_key(["a"])
    assert document.text() == ""


@pytest.mark.parametrize(
    "text",
    [
        "---\nopenai:\n  model: x\n",
        "base: &b\n  model: x\nopenai:\n  <<: *b\n  apiKey: k\n",
        "openai: {model: x}\n",
        "a:\n- 1\n- 2\nb: 1\n",
    ],
)
def test_document_markers_anchors_flow_mappings_and_unindented_lists_stay(text: str) -> None:
    document = YamlDocument(text)
    document.set_key(["openai", "endpoint"], "http://e")
    changes = opcodes(text, document.text())
    assert all(kind == "insert" for kind, _, _ in changes) or changes[0][1] == ["openai: {model: x}"]
    expected = yaml.safe_load(text)
    expected.setdefault("openai", {})["endpoint"] = "http://e"
    assert yaml.safe_load(document.text()) == expected
