"""The one wording of validation errors shared by plugin and permission files."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, ValidationError

from ironhive.adapters.validation_errors import (
    MAX_REPORTED,
    case_insensitive_keys,
    describe_validation_error,
    kind_of,
    location_text,
)
from ironhive.domain.errors import ConfigurationError


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str
    priority: int = 0


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: list[Rule] = []
    options: dict[str, int] = {}


def problems(document: Any, **options: Any) -> str:
    with pytest.raises(ValidationError) as raised:
        Section.model_validate(document)
    return describe_validation_error(raised.value, **options)


@pytest.mark.parametrize(
    ("document", "prefix", "expected"),
    [
        ({"rulez": []}, "", "unknown key 'rulez' in the top level"),
        ({"rulez": []}, "permissions", "unknown key 'rulez' in permissions"),
        ({"rules": [{"pattern": "a", "action": "x"}]}, "permissions", "unknown key 'action' in permissions.rules[0]"),
        ({"rules": ["text"]}, "", "rules[0] must be a mapping, not text"),
        (
            {"rules": [{"pattern": "a", "priority": "high"}]},
            "p",
            "p.rules[0].priority: Input should be a valid integer",
        ),
    ],
)
def test_common_wording(document: Any, prefix: str, expected: str) -> None:
    assert problems(document, prefix=prefix).startswith(expected)


def test_a_special_wording_is_tried_first_and_may_decline() -> None:
    def no_pattern(detail: Any, here: str, where: str) -> str | None:
        return f"the rule {where} has no pattern" if detail["loc"][-1] == "pattern" else None

    text = problems({"rules": [{}], "extra": 1}, prefix="permissions", special=no_pattern)
    assert text == "the rule permissions.rules[0] has no pattern; unknown key 'extra' in permissions"


@given(count=st.integers(min_value=1, max_value=12))
def test_at_most_the_first_problems_are_listed_and_the_rest_counted(count: int) -> None:
    text = problems({f"bad{index}": index for index in range(count)})
    listed = text.split("; ")
    assert len([item for item in listed if item.startswith("unknown key")]) == min(count, MAX_REPORTED)
    assert (listed[-1] == f"and {count - MAX_REPORTED} more") is (count > MAX_REPORTED)


@given(parts=st.lists(st.one_of(st.integers(0, 99), st.from_regex(r"[a-z]{1,6}", fullmatch=True)), max_size=6))
def test_location_text_reads_like_the_file(parts: list[int | str]) -> None:
    text = location_text("root", parts)
    expected = "root" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts)
    assert text == expected


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (None, "empty"),
        (True, "a boolean"),
        (3, "a number"),
        (1.5, "a number"),
        ("x", "text"),
        ({}, "a mapping"),
        ([], "a list"),
        ((1,), "a list"),
        (object(), "object"),
    ],
)
def test_kind_of(value: object, kind: str) -> None:
    assert kind_of(value) == kind


@given(st.sampled_from(["command", "Command", "COMMAND", "cOmMaNd"]), st.text(max_size=8))
def test_keys_take_their_canonical_name_in_any_case_and_unknown_keys_stay_as_written(spelling: str, other: str) -> None:
    names = {"command": "command"}
    keys = case_insensitive_keys([(spelling, 1), ("X-" + other, 2)], names, "plugin file p.json", "plugins.a")
    assert keys == {"command": 1, "X-" + other: 2}


def test_one_name_in_two_cases_is_a_configuration_error_naming_file_place_and_key() -> None:
    with pytest.raises(ConfigurationError, match=r"plugin file p.json: duplicate key 'Command' in a"):
        case_insensitive_keys([("command", 1), ("Command", 2)], {"command": "command"}, "plugin file p.json", "a")
