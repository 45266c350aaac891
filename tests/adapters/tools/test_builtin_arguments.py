"""The shared argument validator of the built-in tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from ironhive.adapters.tools.arguments import object_schema, validate_arguments
from ironhive.adapters.tools.files import ReadFileTool
from ironhive.domain.errors import ToolArgumentError
from ironhive.domain.invocation.resilient import is_recovery_directive, resilient_function_invoker

SCHEMA = object_schema(
    {
        "path": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean", "default": False},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "items": {"type": "array"},
        "extra": {"type": "object"},
        "start_line": {"type": "integer"},
    },
    required=["path"],
)


def test_object_schema_marks_required_and_closes_the_object() -> None:
    assert SCHEMA["type"] == "object"
    assert SCHEMA["required"] == ["path"]
    assert SCHEMA["additionalProperties"] is False


def test_missing_required_parameter_is_named() -> None:
    with pytest.raises(ToolArgumentError) as info:
        validate_arguments("demo", SCHEMA, {"count": 2})
    assert "required parameter 'path'" in str(info.value)
    assert info.value.parameter == "path"


def test_null_counts_as_missing() -> None:
    with pytest.raises(ToolArgumentError, match=r"required parameter 'path'"):
        validate_arguments("demo", SCHEMA, {"path": None})


def test_no_arguments_at_all_names_the_required_parameter() -> None:
    with pytest.raises(ToolArgumentError, match=r"required parameter 'path'"):
        validate_arguments("demo", SCHEMA, None)


@pytest.mark.parametrize(
    ("name", "value", "expected_type"),
    [
        ("count", "twelve", "an integer"),
        ("count", 1.5, "an integer"),
        ("count", True, "an integer"),
        ("ratio", "fast", "a number"),
        ("flag", "yes", "a boolean"),
        ("flag", 1, "a boolean"),
        ("path", ["a"], "a string"),
        ("path", True, "a string"),
        ("items", "a,b", "an array"),
        ("extra", [], "an object"),
    ],
)
def test_mistyped_value_names_the_expected_type(name: str, value: object, expected_type: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        validate_arguments("demo", SCHEMA, {"path": "x", name: value})  # type: ignore[dict-item]
    assert expected_type in str(info.value)
    assert f"'{name}'" in str(info.value)
    assert info.value.parameter == name


def test_harmless_coercions() -> None:
    result = validate_arguments(
        "demo",
        SCHEMA,
        {"path": 42, "count": " 12 ", "ratio": "0.5", "flag": "TRUE", "mode": "Fast", "items": [1], "extra": {}},
    )
    assert dict(result) == {
        "path": "42",
        "count": 12,
        "ratio": 0.5,
        "flag": True,
        "mode": "fast",
        "items": [1],
        "extra": {},
    }


def test_integral_float_becomes_integer_and_false_string_becomes_false() -> None:
    result = validate_arguments("demo", SCHEMA, {"path": "x", "count": 3.0, "flag": "false"})
    assert result.integer("count") == 3
    assert result.boolean("flag") is False


def test_defaults_are_filled_and_unknown_parameters_dropped() -> None:
    result = validate_arguments("demo", SCHEMA, {"path": "x", "surprise": 1})
    assert dict(result) == {"path": "x", "flag": False}


def test_camel_case_names_are_accepted_for_snake_case_parameters() -> None:
    result = validate_arguments("demo", SCHEMA, {"path": "x", "startLine": "7"})
    assert result.integer("start_line") == 7


def test_enum_violation_lists_the_options() -> None:
    with pytest.raises(ToolArgumentError, match=r"must be one of: fast, slow; got string 'medium'"):
        validate_arguments("demo", SCHEMA, {"path": "x", "mode": "medium"})


def test_minimum_is_enforced() -> None:
    with pytest.raises(ToolArgumentError, match=r"'count' of tool 'demo' must be at least 1; got 0") as info:
        validate_arguments("demo", SCHEMA, {"path": "x", "count": "0"})
    assert info.value.parameter == "count"


def test_arguments_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(ToolArgumentError, match=r"JSON object"):
        validate_arguments("demo", SCHEMA, ["x"])  # type: ignore[arg-type]


def test_long_wrong_values_are_not_echoed_whole() -> None:
    with pytest.raises(ToolArgumentError) as info:
        validate_arguments("demo", SCHEMA, {"path": "x", "count": "y" * 500})
    assert len(str(info.value)) < 200


def test_typed_accessors_refuse_types_the_schema_does_not_promise() -> None:
    result = validate_arguments("demo", SCHEMA, {"path": "x", "count": 2})
    with pytest.raises(TypeError):
        result.string("count")
    with pytest.raises(TypeError):
        result.integer("path")
    with pytest.raises(TypeError):
        result.string("mode")
    assert result.optional_string("mode") is None


async def test_tools_validate_through_the_shared_validator(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\ntwo\nthree\n")
    tool = ReadFileTool(tmp_path)
    assert await tool.invoke({"path": "f.txt", "start_line": "2", "line_count": "1"}) == "two\n"
    with pytest.raises(ToolArgumentError, match=r"required parameter 'path'"):
        await tool.invoke({})
    with pytest.raises(ToolArgumentError, match=r"must be an integer"):
        await tool.invoke({"path": "f.txt", "start_line": "two"})


async def test_a_built_in_tool_with_bad_arguments_answers_with_the_recovery_directive(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\n")
    tool = ReadFileTool(tmp_path)
    directive = await resilient_function_invoker(tool, {"path": "f.txt", "line_count": [2]})
    assert is_recovery_directive(directive)
    assert "Parameter 'line_count' of tool 'read_file' must be an integer; got an array" in directive
    assert "1. Supply the parameter 'line_count'" in directive
