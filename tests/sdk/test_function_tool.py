"""@tool: schema from type hints and docstring, argument validation and coercion, sync/async, errors, results."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Mapping
from typing import Annotated, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptedToolCall, ScriptStep
from ironhive.adapters.tools.function_tool import FunctionTool, parse_docstring, tool
from ironhive.domain.agent_loop import AgentLoop
from ironhive.domain.errors import ToolArgumentError, ToolError
from ironhive.domain.invocation.pipeline import ToolInvocationPipeline
from ironhive.domain.invocation.resilient import ResilientArgumentsMiddleware, recovery_directive
from ironhive.ports.chat import JsonValue
from ironhive.ports.tools import Tool
from tests.support.fakes import FakeClock


@tool
def forecast(
    city: str,
    days: int = 1,
    unit: Literal["celsius", "fahrenheit"] = "celsius",
    hours: Annotated[list[int] | None, Field(description="Hours of the day to include.")] = None,
) -> str:
    """Weather forecast for a city.

    Uses the nearest station.

    Args:
        city: The city's name,
            as people write it.
        days (int): How many days ahead.
        unit: The temperature unit.
        hours: Overridden by the Field's description.

    Returns:
        The forecast as text.
    """
    return f"{city}: {days} day(s) in {unit}, hours {hours}"


def run(coroutine_tool: Tool, arguments: Mapping[str, JsonValue]) -> str:
    return asyncio.run(coroutine_tool.invoke(arguments))


def test_schema_and_description_come_from_the_hints_and_the_docstring() -> None:
    assert forecast.spec.name == "forecast"
    assert forecast.spec.description == "Weather forecast for a city.\n\nUses the nearest station."
    assert forecast.spec.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city's name, as people write it."},
            "days": {"type": "integer", "default": 1, "description": "How many days ahead."},
            "unit": {
                "type": "string",
                "enum": ["celsius", "fahrenheit"],
                "default": "celsius",
                "description": "The temperature unit.",
            },
            "hours": {
                "anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}],
                "default": None,
                "description": "Hours of the day to include.",
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def test_a_tool_is_a_tool_and_still_the_function() -> None:
    assert isinstance(forecast, Tool)
    assert forecast("Paris", days=2) == "Paris: 2 day(s) in celsius, hours None"
    assert forecast.__name__ == "forecast"
    assert forecast.__doc__ is not None and forecast.__doc__.startswith("Weather forecast")


def test_name_and_description_can_be_given() -> None:
    def lookup(term: str) -> str:
        return term

    named = tool(lookup, name="search_docs", description="Search the docs.")
    assert (named.spec.name, named.spec.description) == ("search_docs", "Search the docs.")

    @tool(name="shout")
    def loud(text: str) -> str:
        return text.upper()

    assert loud.spec.name == "shout"
    assert loud.spec.description == ""
    assert run(loud, {"text": "hi"}) == "HI"


def test_arguments_are_coerced_before_the_call() -> None:
    assert (
        run(forecast, {"city": "Oslo", "days": "3", "hours": ["6", 18]}) == "Oslo: 3 day(s) in celsius, hours [6, 18]"
    )
    # A number for a string, camelCase for a snake_case name, null for "not sent", unknown keys dropped.

    @tool
    def note(max_length: int, label: str) -> str:
        return f"{label}/{max_length!r}"

    assert run(note, {"maxLength": 12.0, "label": 7, "extra": True}) == "7/12"
    assert run(forecast, {"city": "Rome", "days": None, "unit": None}) == "Rome: 1 day(s) in celsius, hours None"


def test_a_missing_argument_gives_the_recovery_directive_naming_the_parameter() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        run(forecast, {"days": 2})
    assert caught.value.parameter == "city"
    assert str(caught.value) == "Missing required parameter 'city' for tool 'forecast'"
    directive = recovery_directive("forecast", caught.value)
    assert directive.startswith(
        "Tool 'forecast' was not run: its arguments do not fit its parameters "
        "(Missing required parameter 'city' for tool 'forecast').\n"
    )
    assert "1. Supply the parameter 'city' with a value of the type the tool's schema asks for." in directive


def test_a_wrong_type_names_the_parameter_and_the_value() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        run(forecast, {"city": "Oslo", "days": "soon"})
    assert caught.value.parameter == "days"
    assert str(caught.value) == (
        "Parameter 'days' of tool 'forecast' is not valid: Input should be a valid integer, unable to parse string "
        "as an integer; got string 'soon'"
    )
    with pytest.raises(ToolArgumentError, match=r"Parameter 'unit' of tool 'forecast' is not valid: Input should be"):
        run(forecast, {"city": "Oslo", "unit": "kelvin"})
    with pytest.raises(ToolArgumentError, match=r"Parameter 'hours\[1\]' of tool 'forecast'"):
        run(forecast, {"city": "Oslo", "hours": [1, "noon"]})
    with pytest.raises(ToolArgumentError, match="expects its arguments as a JSON object"):
        run(forecast, ["Oslo"])  # type: ignore[arg-type]


async def test_the_agent_answers_a_missing_argument_with_the_directive() -> None:
    client = ScriptedChatClient(
        [
            ScriptStep(tool_calls=(ScriptedToolCall(name="forecast", arguments={"days": 2}),)),
            ScriptStep(text="Which city?"),
        ]
    )
    pipeline = ToolInvocationPipeline([ResilientArgumentsMiddleware()])
    turn = await AgentLoop(client, clock=FakeClock(), tools=[forecast], pipeline=pipeline).run("forecast please")
    [record] = turn.tool_calls
    assert record.success is False
    assert record.result.startswith("Tool 'forecast' was not run: its arguments do not fit its parameters")
    assert "Supply the parameter 'city'" in record.result


async def test_sync_functions_run_in_a_worker_thread_and_async_ones_on_the_loop() -> None:
    threads: list[int] = []

    @tool
    def blocking(n: int) -> int:
        threads.append(threading.get_ident())
        return n * 2

    @tool
    async def non_blocking(n: int) -> int:
        threads.append(threading.get_ident())
        await asyncio.sleep(0)
        return n + 1

    assert await blocking.invoke({"n": "21"}) == "42"
    assert await non_blocking.invoke({"n": 1}) == "2"
    assert threads[0] != threading.get_ident()
    assert threads[1] == threading.get_ident()
    assert await non_blocking(5) == 6


async def test_an_exception_of_the_function_becomes_a_tool_error() -> None:
    @tool
    def divide(a: float, b: float) -> float:
        return a / b

    with pytest.raises(ToolError, match=r"^divide failed: ZeroDivisionError: float division by zero$") as caught:
        await divide.invoke({"a": 1, "b": 0})
    assert not isinstance(caught.value, ToolArgumentError)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)

    @tool
    async def strict(text: str) -> str:
        raise ToolError("text must not be shouted")

    with pytest.raises(ToolError, match=r"^text must not be shouted$"):
        await strict.invoke({"text": "HI"})


@dataclasses.dataclass
class Reading:
    city: str
    degrees: float


async def test_a_result_that_is_not_text_is_sent_as_json() -> None:
    @tool
    def reading(city: str) -> Reading:
        return Reading(city=city, degrees=21.5)

    @tool
    def readings(cities: list[str]) -> dict[str, object]:
        return {"cities": cities, "count": len(cities), "note": "é"}

    @tool
    def nothing() -> None:
        return None

    assert await reading.invoke({"city": "Paris"}) == '{"city":"Paris","degrees":21.5}'
    assert await readings.invoke({"cities": ["a", "b"]}) == '{"cities":["a","b"],"count":2,"note":"é"}'
    assert await nothing.invoke({}) == "null"
    assert nothing.spec.parameters == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


async def test_nested_models_and_awkward_parameter_names_work_without_warnings() -> None:
    class Opaque:
        pass

    @tool
    def store(json: Reading, schema: str = "v1", _private: int = 0, marker: object = Opaque()) -> str:
        return f"{json.city} {json.degrees} {schema} {_private} {type(marker).__name__}"

    properties = store.spec.parameters["properties"]
    assert isinstance(properties, dict)
    assert list(properties) == ["json", "schema", "_private", "marker"]
    assert "default" not in properties["marker"]  # type: ignore[operator]
    assert "$defs" in store.spec.parameters
    assert await store.invoke({"json": {"city": "Oslo", "degrees": "3"}}) == "Oslo 3.0 v1 0 Opaque"


def test_functions_that_cannot_be_tools_are_refused_at_once() -> None:
    def variadic(*names: str) -> str:
        return ""

    with pytest.raises(TypeError, match=r"cannot take \*names"):
        tool(variadic)
    with pytest.raises(TypeError, match=r"Tool name '<lambda>' is not usable"):
        tool(lambda x: x)
    assert tool(lambda x: x, name="identity").spec.parameters["required"] == ["x"]


def test_docstring_parsing_reads_google_style_args() -> None:
    doc = (
        "Summary.\n\nMore.\n\nArgs:\n    a (int): First\n        continued.\n    *rest: Others.\n\nRaises:\n    E: no."
    )
    assert parse_docstring(doc) == ("Summary.\n\nMore.", {"a": "First continued.", "rest": "Others."})
    assert parse_docstring(None) == ("", {})


@tool
async def typed(
    count: int,
    ratio: float,
    name: str,
    flag: bool,
    tags: list[str],
    mode: Literal["fast", "slow"],
    limit: int | None = None,
) -> str:
    """Echo what arrived, after checking it has the declared types."""
    assert isinstance(count, int) and not isinstance(count, bool)
    assert isinstance(ratio, float | int) and not isinstance(ratio, bool)
    assert isinstance(name, str)
    assert isinstance(flag, bool)
    assert isinstance(tags, list) and all(isinstance(tag, str) for tag in tags)
    assert mode in ("fast", "slow")
    assert limit is None or (isinstance(limit, int) and not isinstance(limit, bool))
    return "ok"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_names = st.sampled_from(["count", "ratio", "name", "flag", "tags", "mode", "limit", "maxCount", "other"])
_likely = st.sampled_from(["3", "fast", "slow", "true", "2.5", "x", ["a", 1], []])


_value = _json | _likely
# Values that usually fit (sometimes only after coercion), mixed with arbitrary JSON: both outcomes get exercised.
_fitting: dict[str, st.SearchStrategy[JsonValue]] = {
    "count": st.integers() | st.integers().map(str) | st.just(2.0),
    "ratio": st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.just("2.5"),
    "name": st.text(max_size=8) | st.integers(),
    "flag": st.booleans() | st.sampled_from(["true", "false", "yes", 0, 1]),
    "tags": st.lists(st.text(max_size=3) | st.integers(), max_size=3),
    "mode": st.sampled_from(["fast", "slow", "FAST", "medium"]),
    "limit": st.none() | st.integers() | st.just("7"),
}


def _mostly(fits: st.SearchStrategy[JsonValue]) -> st.SearchStrategy[JsonValue]:
    return st.integers(0, 5).flatmap(lambda pick: _value if pick == 0 else fits)


_arguments = st.dictionaries(_names, _value, max_size=8) | st.fixed_dictionaries(
    {name: _mostly(fits) for name, fits in _fitting.items() if name != "limit"},
    optional={"limit": _fitting["limit"] | _value, "maxCount": _value, "other": _value},
)


@settings(max_examples=200, deadline=None)
@given(_arguments)
def test_any_json_arguments_validate_to_the_declared_types_or_raise_a_tool_argument_error(
    arguments: dict[str, JsonValue],
) -> None:
    try:
        result = asyncio.run(typed.invoke(arguments))
    except ToolArgumentError as error:
        assert error.parameter is not None
        assert f"'{error.parameter}" in str(error)  # 'tags' or 'tags[0]'
    else:
        assert result == "ok"


def test_the_decorated_type_keeps_the_signature() -> None:
    assert isinstance(forecast, FunctionTool)
    assert typed.spec.description == "Echo what arrived, after checking it has the declared types."
