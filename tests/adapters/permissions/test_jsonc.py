"""JSON with comments: comments and trailing commas anywhere between tokens, strings kept, errors with line:column."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.config.safe_files import MAX_NESTING, JsonNestingError
from ironhive.adapters.mcp.plugin_config import read_plugin_file
from ironhive.adapters.permissions.jsonc import JsoncSyntaxError, load_jsonc
from ironhive.domain.errors import ConfigurationError

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
_comments = st.sampled_from(["", " ", "\n", "// a note, with } and ]\n", "/* block\n , ] */", "/**/", "\t// x\n"])


def commented(value: object, data: st.DataObject) -> str:
    """``value`` as JSON with generated comments between tokens and trailing commas after the last items."""

    def gap() -> str:
        return data.draw(_comments)

    def trailing() -> str:
        return data.draw(st.sampled_from(["", ",", f",{gap()}"]))

    if isinstance(value, list) and value:
        items = f",{gap()}".join(gap() + commented(item, data) + gap() for item in value)
        return f"[{items}{trailing()}]"
    if isinstance(value, dict) and value:
        members = f",{gap()}".join(
            f"{gap()}{json.dumps(key)}{gap()}:{gap()}{commented(item, data)}{gap()}" for key, item in value.items()
        )
        return f"{{{members}{trailing()}}}"
    return json.dumps(value)


@given(_values, st.data())
def test_comments_and_trailing_commas_anywhere_read_as_the_plain_value(value: object, data: st.DataObject) -> None:
    text = data.draw(_comments) + commented(value, data) + data.draw(_comments)
    assert load_jsonc(text) == value


@given(st.text())
def test_strings_holding_comment_markers_and_commas_are_kept(content: str) -> None:
    for text in (f"//{content}", f"/*{content}*/", f"{content},]", f'a " // b /* c */,}}{content}'):
        assert load_jsonc(json.dumps({"k": text, "l": [text]})) == {"k": text, "l": [text]}


def test_object_pairs_hook_sees_every_pair_in_order() -> None:
    pairs = load_jsonc('{"b": 1, /* c */ "a": 2, "b": 3,}', object_pairs_hook=list)
    assert pairs == [("b", 1), ("a", 2), ("b", 3)]


def test_a_byte_order_mark_and_json5_spellings_are_accepted() -> None:
    assert load_jsonc("\ufeff{'single': 'quotes', unquoted: 0x10, half: .5}") == {
        "single": "quotes",
        "unquoted": 16,
        "half": 0.5,
    }
    assert math.isinf(load_jsonc("[Infinity]")[0])  # type: ignore[index]


@pytest.mark.parametrize(
    ("text", "line", "column", "problem"),
    [
        ('{"permissions": {"read": [}', 1, 27, 'unexpected "}"'),
        ('{\n  "a": 1,\n  "b": ,\n}', 3, 8, 'unexpected ","'),
        ('{"a": 1} // fine\n/* open', 2, 8, "unexpected end of input"),
        ('{"a": 1}\n\n  x', 3, 3, 'unexpected "x"'),
        ('{"a": [1,,]}', 1, 10, 'unexpected ","'),
        ("", 1, 1, "the document is empty"),
    ],
)
def test_malformed_text_names_line_and_column(text: str, line: int, column: int, problem: str) -> None:
    with pytest.raises(JsoncSyntaxError) as raised:
        load_jsonc(text)
    assert (raised.value.line, raised.value.column, str(raised.value)) == (line, column, problem)


@pytest.mark.parametrize(
    "opening",
    [
        "[" * (MAX_NESTING + 1),
        '{"a": ' * (MAX_NESTING + 1),
        '// "\n' + "[" * 5000,
        '// "\n' + "[" * 5000 + '\n// "',  # quotes in comments hide the brackets from the count: the parser's limit
    ],
)
def test_deep_nesting_is_refused_before_the_parser_recurses(opening: str) -> None:
    with pytest.raises(JsonNestingError):
        load_jsonc(opening)


def test_a_plugin_file_with_comments_loads_and_a_broken_one_names_file_line_and_column(tmp_path: Path) -> None:
    good = tmp_path / "plugins.json"
    good.write_text('{\n  // a server\n  "plugins": {"a": {"command": "x",},},\n}\n')
    assert list(read_plugin_file(good, "project").config.plugins) == ["a"]

    bad = tmp_path / "broken.json"
    bad.write_text('{\n  "plugins": {\n    "a": {"command": "x" "y"}\n  }\n}\n')
    with pytest.raises(ConfigurationError) as raised:
        read_plugin_file(bad, "project")
    assert str(bad) in str(raised.value)
    assert 'JSON syntax error at line 3, column 26: unexpected """' in str(raised.value)


def test_escaped_surrogate_pairs_become_one_character_as_json_reads_them() -> None:
    text = r'{"\ud83d\ude00": ["\ud83d\ude00", "\ud800"], "k": "\ud83d\ude00"}'
    assert load_jsonc(text) == json.loads(text)
    assert load_jsonc(text, object_pairs_hook=list) == [("😀", ["😀", "\ud800"]), ("k", "😀")]
