"""Generated schemas and arguments: the argument validator agrees with jsonschema, the oracle, on every verdict."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ironhive.adapters.tools.arguments import validate_arguments
from ironhive.domain.errors import ToolArgumentError
from ironhive.domain.invocation.resilient import recovery_directive

NAMES = st.sampled_from(["path", "count", "ratio", "flag", "mode", "items", "filter", "note"])
JSON_SCALARS = (
    st.none() | st.booleans() | st.integers(-50, 50) | st.floats(-50, 50, allow_nan=False) | st.text(max_size=6)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS | st.sampled_from(["12", " 7 ", "-3", "0.5", "TRUE", "false", "Fast", "SLOW", "x1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def property_schemas(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    """One parameter's schema: a type (or a list of types), with the keywords the tools and MCP servers use."""
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean", "array", "object", "enum", "nullable"]))
    schema: dict[str, Any]
    if kind == "enum":
        schema = {"type": "string", "enum": draw(st.lists(st.sampled_from(["fast", "slow", "Fast", "x"]), min_size=1))}
    elif kind == "nullable":
        schema = {"type": [draw(st.sampled_from(["string", "integer"])), "null"]}
    elif kind == "array" and depth < 2:
        schema = {"type": "array", "items": draw(property_schemas(depth + 1))}
        if draw(st.booleans()):
            schema["minItems"] = draw(st.integers(0, 2))
    elif kind == "object" and depth < 2:
        schema = draw(object_schemas(depth + 1))
    else:
        schema = {"type": kind if kind not in ("array", "object") else "string"}
    if schema["type"] in ("integer", "number") and draw(st.booleans()):
        schema[draw(st.sampled_from(["minimum", "maximum", "exclusiveMinimum"]))] = draw(st.integers(-5, 5))
    if schema["type"] == "string" and "enum" not in schema and draw(st.booleans()):
        schema[draw(st.sampled_from(["minLength", "maxLength"]))] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        schema["default"] = draw(JSON_SCALARS)
    return schema


@st.composite
def object_schemas(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    """An ``object`` schema: some properties, some of them required, closed or open."""
    properties = draw(st.dictionaries(NAMES, property_schemas(depth), max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if properties:
        schema["required"] = sorted(draw(st.sets(st.sampled_from(sorted(properties)))))
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


ARGUMENTS = st.dictionaries(NAMES, JSON_VALUES, max_size=5)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(schema=object_schemas(), arguments=ARGUMENTS, fill_defaults=st.booleans())
def test_what_passes_fits_the_schema_by_jsonschemas_verdict(
    schema: dict[str, Any], arguments: dict[str, Any], fill_defaults: bool
) -> None:
    try:
        result = validate_arguments("demo", schema, arguments, fill_defaults=fill_defaults)
    except ToolArgumentError as error:
        # A refusal names what to fix and becomes the model's recovery directive.
        assert "demo" in str(error)
        assert "Tool 'demo' was not run" in recovery_directive("demo", error)
        return
    # Defaults are filled in before the check, so a tool whose own default does not fit its schema is refused too.
    jsonschema.validate(dict(result), schema, cls=jsonschema.Draft202012Validator)


@SETTINGS
@given(schema=object_schemas(), arguments=ARGUMENTS)
def test_what_jsonschema_accepts_passes_unchanged(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    if not jsonschema.Draft202012Validator(schema).is_valid(arguments):
        return
    result = validate_arguments("demo", schema, arguments, fill_defaults=False)
    assert dict(result) == arguments
    assert [type(value) for value in result.values()] == [
        int if isinstance(value, float) and value.is_integer() and _wants_integer(schema, key) else type(value)
        for key, value in arguments.items()
    ]


@SETTINGS
@given(schema=object_schemas(), arguments=ARGUMENTS)
def test_a_refusal_names_a_parameter_that_was_sent_or_is_required(
    schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    try:
        validate_arguments("demo", schema, arguments, fill_defaults=False)
    except ToolArgumentError as error:
        if error.parameter is not None:
            assert error.parameter in arguments or error.parameter in schema.get("required", [])
            assert f"'{error.parameter}" in str(error)
    else:
        return


def _wants_integer(schema: dict[str, Any], key: str) -> bool:
    return schema.get("properties", {}).get(key, {}).get("type") == "integer"


@pytest.mark.parametrize(
    ("schema", "arguments", "message"),
    [
        (
            {"type": "object", "properties": {"hours": {"type": "array", "items": {"type": "integer"}}}},
            {"hours": [1, "two"]},
            "Parameter 'hours[1]' of tool 'demo' must be an integer; got string 'two'",
        ),
        (
            {
                "type": "object",
                "properties": {"filter": {"type": "object", "properties": {"name": {}}, "required": ["name"]}},
            },
            {"filter": {}},
            "Parameter 'filter.name' of tool 'demo' is missing",
        ),
        (
            {"type": "object", "properties": {"note": {"type": "string", "maxLength": 3}}},
            {"note": "longer"},
            "Parameter 'note' of tool 'demo' must be at most 3 characters long; got string 'longer'",
        ),
        (
            {"type": "object", "properties": {"ratio": {"type": "number", "exclusiveMaximum": 1}}},
            {"ratio": "1"},
            "Parameter 'ratio' of tool 'demo' must be less than 1; got 1",
        ),
        (
            {"type": "object", "properties": {"when": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}}},
            {"when": "soon"},
            "Parameter 'when' of tool 'demo' is not valid: 'soon' is not valid under any of the given schemas",
        ),
    ],
)
def test_nested_and_other_keywords_name_the_place_and_the_rule(
    schema: dict[str, Any], arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolArgumentError) as info:
        validate_arguments("demo", schema, arguments)
    assert str(info.value) == message
    assert info.value.parameter == next(iter(arguments))


def test_several_problems_are_named_together_up_to_three() -> None:
    schema = {
        "type": "object",
        "properties": {name: {"type": "integer"} for name in ("a", "b", "c", "d")},
        "required": ["e"],
    }
    with pytest.raises(ToolArgumentError) as info:
        validate_arguments("demo", schema, {"a": "x", "b": "x", "c": "x", "d": "x"})
    assert str(info.value).count("must be an integer") + str(info.value).count("Missing required") == 3
    assert str(info.value).endswith("2 more problem(s) with the arguments")


def test_a_schema_that_is_not_json_schema_leaves_the_arguments_to_the_server(caplog: pytest.LogCaptureFixture) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": "n"}
    assert dict(validate_arguments("demo", schema, {"n": "4", "x": 1})) == {"n": 4, "x": 1}
    assert "not valid JSON Schema" in caplog.text


def test_a_null_the_schema_accepts_is_sent_and_one_it_refuses_means_not_sent() -> None:
    schema = {
        "type": "object",
        "properties": {"tag": {"type": ["string", "null"]}, "count": {"type": "integer", "default": 1}},
    }
    assert dict(validate_arguments("demo", schema, {"tag": None, "count": None})) == {"tag": None, "count": 1}
    assert dict(validate_arguments("demo", schema, {"count": None}, fill_defaults=False)) == {}
