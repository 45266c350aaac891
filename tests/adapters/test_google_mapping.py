"""Pure tests (no I/O) of the Google (Gemini) adapter's mapping, schema rewriting and error translation."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from google.genai import errors as genai_errors
from google.genai import types
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.google.client import DEFAULT_API_VERSION, split_base_url
from ironhive.adapters.google.errors import translate_error
from ironhive.adapters.google.mapping import (
    DUMMY_THOUGHT_SIGNATURE,
    THINKING_BUDGETS,
    THINKING_LEVELS,
    StreamAccumulator,
    build_request,
    to_chat_response,
    to_finish_reason,
    to_function_calling_config,
    to_gemini_contents,
    to_thinking_config,
    to_usage,
    uses_thinking_level,
)
from ironhive.adapters.google.reasoning import (
    WireCall,
    call_state,
    text_signature_of,
    text_signature_part,
    wire_call_of,
)
from ironhive.adapters.google.schema import to_gemini_schema
from ironhive.domain.errors import ConfigurationError, ContextOverflowError, ProviderError
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatUpdate,
    JsonValue,
    OpaqueState,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)

SPEC = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"gen_{next(counter)}"


def dump(contents: list[types.Content]) -> list[dict[str, Any]]:
    return [content.model_dump(mode="json", exclude_none=True, by_alias=True) for content in contents]


def response(
    parts: list[dict[str, Any]] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, int] | None = None,
    blocked: str | None = None,
) -> types.GenerateContentResponse:
    payload: dict[str, Any] = {}
    if parts is not None:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        payload["candidates"] = [candidate]
    if usage is not None:
        payload["usageMetadata"] = usage
    if blocked is not None:
        payload["promptFeedback"] = {"blockReason": blocked}
    return types.GenerateContentResponse.model_validate(payload)


# -- contents -------------------------------------------------------------------------------------------------------


def test_roles_system_instruction_merging_and_dropped_thinking() -> None:
    messages = [
        ChatMessage.of_text(Role.SYSTEM, "Be brief."),
        ChatMessage.of_text(Role.USER, "Hi"),
        ChatMessage(role=Role.ASSISTANT, parts=(ThinkingPart(text="hmm"), TextPart(text="Hello"))),
        ChatMessage(role=Role.ASSISTANT, parts=(ThinkingPart(text="only thinking"),)),
        ChatMessage.of_text(Role.ASSISTANT, "Anything else?"),
        ChatMessage.of_text(Role.SYSTEM, "Stay polite."),
        ChatMessage.of_text(Role.USER, ""),
        ChatMessage.of_text(Role.USER, "No."),
    ]

    system, contents = to_gemini_contents(messages)

    assert system == "Be brief.\n\nStay polite."
    assert dump(contents) == [
        {"role": "user", "parts": [{"text": "Hi"}]},
        {"role": "model", "parts": [{"text": "Hello"}, {"text": "Anything else?"}]},
        {"role": "user", "parts": [{"text": "No."}]},
    ]


def test_no_system_messages_means_no_instruction() -> None:
    assert to_gemini_contents([ChatMessage.of_text(Role.USER, "x")])[0] is None


MODEL = "gemini-3-pro-preview"


def test_calls_carry_their_stored_ids_and_signatures_and_results_their_ids() -> None:
    calls = (
        ToolCallPart(call_id="a", name="one", arguments={"x": [1, None]}, opaque=call_state("fc-a", b"sig-a", MODEL)),
        ToolCallPart(call_id="b", name="two", arguments={}),
    )
    result = ToolResultPart(call_id="a", name="one", result="r", success=True)
    messages = [ChatMessage(role=Role.ASSISTANT, parts=calls), ChatMessage(role=Role.TOOL, parts=(result,))]

    _, contents = to_gemini_contents(messages, MODEL)

    model, answers = contents
    first, second = model.parts or []
    assert first.function_call == types.FunctionCall(id="fc-a", name="one", args={"x": [1, None]})
    assert first.thought_signature == b"sig-a"
    assert second.function_call == types.FunctionCall(name="two", args={})
    assert second.thought_signature is None
    assert (answers.parts or [])[0].function_response == types.FunctionResponse(
        id="fc-a", name="one", response={"result": "r"}
    )


def test_another_models_signature_is_not_sent_but_its_call_id_is() -> None:
    call = ToolCallPart(call_id="a", name="one", arguments={}, opaque=call_state("fc-a", b"sig-a", "gemini-2.5-pro"))

    _, contents = to_gemini_contents([ChatMessage(role=Role.ASSISTANT, parts=(call,))], MODEL)

    (part,) = contents[0].parts or []
    assert part.function_call == types.FunctionCall(id="fc-a", name="one", args={})
    assert part.thought_signature == DUMMY_THOUGHT_SIGNATURE


@given(wire_id=st.none() | st.text(), signature=st.none() | st.binary(min_size=1))
def test_the_stored_state_gives_back_what_gemini_sent(wire_id: str | None, signature: bytes | None) -> None:
    state = call_state(wire_id, signature, MODEL)
    call = ToolCallPart(call_id="c", name="t", arguments={}, opaque=state)

    if wire_id is None and signature is None:
        assert state is None
    else:
        assert wire_call_of(call, MODEL) == WireCall(wire_id=wire_id, signature=signature)


@pytest.mark.parametrize(
    "opaque",
    [
        None,
        OpaqueState(provider="anthropic", data='{"id": "x", "signature": "c2ln"}'),
        OpaqueState(provider="google", data="not json"),
        OpaqueState(provider="google", data="[1]"),
    ],
    ids=["none", "foreign", "not-json", "not-object"],
)
def test_a_call_without_readable_gemini_state_has_no_wire_call(opaque: OpaqueState | None) -> None:
    assert wire_call_of(ToolCallPart(call_id="c", name="t", arguments={}, opaque=opaque), MODEL) is None


def test_an_answers_signature_goes_back_on_its_last_text_part_for_the_same_model_only() -> None:
    signed = text_signature_part("plan", b"sig-t", MODEL)
    answer = ChatMessage(role=Role.ASSISTANT, parts=(signed, TextPart(text="Hi"), TextPart(text="there")))
    bare = ChatMessage(role=Role.ASSISTANT, parts=(signed,))  # no text to carry it: nothing is sent

    _, contents = to_gemini_contents([answer, ChatMessage.of_text(Role.USER, "ok"), bare], MODEL)
    _, elsewhere = to_gemini_contents([answer], "gemini-2.5-flash")

    assert dump(contents) == [
        {"role": "model", "parts": [{"text": "Hi"}, {"text": "there", "thoughtSignature": "c2lnLXQ="}]},
        {"role": "user", "parts": [{"text": "ok"}]},
    ]
    assert dump(elsewhere) == [{"role": "model", "parts": [{"text": "Hi"}, {"text": "there"}]}]


def test_a_whole_answer_keeps_its_signature_with_its_thoughts() -> None:
    answer = response(
        [{"text": "why", "thought": True}, {"text": "Because.", "thoughtSignature": "c2ln"}], finish="STOP"
    )

    result = to_chat_response(answer, ids(), MODEL)

    assert result.message.parts == (text_signature_part("why", b"sig", MODEL), TextPart(text="Because."))
    thinking = result.message.parts[0]
    assert isinstance(thinking, ThinkingPart) and text_signature_of(thinking, MODEL) == b"sig"


def test_a_malformed_stored_signature_is_dropped_not_sent() -> None:
    opaque = OpaqueState(provider="google", data='{"id": 3, "signature": "%%%"}', model=MODEL)

    assert wire_call_of(ToolCallPart(call_id="c", name="t", arguments={}, opaque=opaque), MODEL) == WireCall(
        wire_id=None, signature=None
    )


def test_unknown_calls_get_the_dummy_signature_on_the_first_call_of_each_turn() -> None:
    def turn(*names: str) -> ChatMessage:
        calls = tuple(ToolCallPart(call_id=f"{name}-id", name=name, arguments=None) for name in names)
        return ChatMessage(role=Role.ASSISTANT, parts=(TextPart(text="Calling."), *calls))

    results = ChatMessage(role=Role.TOOL, parts=(ToolResultPart(call_id="a-id", name="a", result="", success=True),))
    _, contents = to_gemini_contents([turn("a"), results, turn("b", "c")])

    first_turn, _, second_turn = contents
    assert [part.thought_signature for part in first_turn.parts or []] == [None, DUMMY_THOUGHT_SIGNATURE]
    assert [part.thought_signature for part in second_turn.parts or []] == [None, DUMMY_THOUGHT_SIGNATURE, None]
    assert (second_turn.parts or [])[1].function_call == types.FunctionCall(name="b", args={})


def test_results_follow_the_order_of_their_calls_by_id_then_name() -> None:
    calls = ChatMessage(
        role=Role.ASSISTANT,
        parts=(
            ToolCallPart(call_id="1", name="read", arguments={}),
            ToolCallPart(call_id="2", name="list", arguments={}),
            ToolCallPart(call_id="3", name="read", arguments={}),
        ),
    )
    results = ChatMessage(
        role=Role.USER,
        parts=(
            TextPart(text="Go on."),
            ToolResultPart(call_id="x", name="read", result="first read", success=True),
            ToolResultPart(call_id="2", name="list", result="listing", success=None),
            ToolResultPart(call_id="1", name="read", result="by id", success=False),
            ToolResultPart(call_id="y", name="grep", result="stray", success=True),
        ),
    )

    _, contents = to_gemini_contents([calls, results])

    assert dump(contents)[1] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "read", "response": {"error": "by id"}}},
            {"functionResponse": {"name": "list", "response": {"result": "listing"}}},
            {"functionResponse": {"name": "read", "response": {"result": "first read"}}},
            {"functionResponse": {"name": "grep", "response": {"result": "stray"}}},
            {"text": "Go on."},
        ],
    }


def test_tool_messages_split_over_several_messages_merge_into_one_user_turn() -> None:
    call = ToolCallPart(call_id="c", name="t", arguments={})
    messages = [
        ChatMessage(role=Role.ASSISTANT, parts=(call,)),
        ChatMessage(role=Role.TOOL, parts=(ToolResultPart(call_id="c", name="t", result="r", success=True),)),
        ChatMessage.of_text(Role.TOOL, "tool messages carry no text"),
        ChatMessage.of_text(Role.USER, "Thanks."),
    ]

    _, contents = to_gemini_contents(messages)

    assert dump(contents)[1] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "t", "response": {"result": "r"}}}, {"text": "Thanks."}],
    }


# -- options --------------------------------------------------------------------------------------------------------


def test_unset_options_are_omitted_and_sdk_automation_is_off() -> None:
    request = build_request([], ChatOptions(tools=(), tool_mode="none"), default_model="gemini-x")

    assert request.model == "gemini-x"
    config = request.config.model_dump(exclude_none=True)
    assert config.pop("automatic_function_calling")["disable"] is True
    assert config == {"automatic_continuation": False}


def test_options_map_onto_the_config() -> None:
    options = ChatOptions(
        model="gemini-3-pro-preview",
        temperature=0.0,
        max_output_tokens=10,
        tools=(SPEC,),
        tool_mode="require_any",
        reasoning_effort="extra_high",
    )

    request = build_request([ChatMessage.of_text(Role.SYSTEM, "S")], options, default_model="gemini-x")

    config = request.config
    assert request.model == "gemini-3-pro-preview"
    assert (config.system_instruction, config.temperature, config.max_output_tokens) == ("S", 0.0, 10)
    assert config.tool_config == types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(mode=types.FunctionCallingConfigMode.ANY)
    )
    assert config.thinking_config == types.ThinkingConfig(
        thinking_level=types.ThinkingLevel.XHIGH, include_thoughts=True
    )
    (tool,) = config.tools or []
    assert isinstance(tool, types.Tool)
    (declaration,) = tool.function_declarations or []
    assert (declaration.name, declaration.description) == ("read_file", "Read a file.")
    assert declaration.parameters == types.Schema(
        type=types.Type.OBJECT, properties={"path": types.Schema(type=types.Type.STRING)}, required=["path"]
    )


def test_a_tool_without_parameters_declares_none() -> None:
    bare = ToolSpec(name="now", description="The time.", parameters={"type": "object", "properties": {}})

    config = build_request([], ChatOptions(tools=(bare,)), default_model="m").config

    (tool,) = config.tools or []
    assert isinstance(tool, types.Tool)
    assert (tool.function_declarations or [])[0].parameters is None


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("auto", types.FunctionCallingConfig(mode=types.FunctionCallingConfigMode.AUTO)),
        ("none", types.FunctionCallingConfig(mode=types.FunctionCallingConfigMode.NONE)),
        ("require_any", types.FunctionCallingConfig(mode=types.FunctionCallingConfigMode.ANY)),
        (
            "require: read_file",
            types.FunctionCallingConfig(mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=["read_file"]),
        ),
    ],
)
def test_tool_modes(mode: str, expected: types.FunctionCallingConfig) -> None:
    assert to_function_calling_config(mode) == expected


@pytest.mark.parametrize("mode", ["always", "require:", "require: ", "REQUIRE_ANY", ""])
def test_unknown_tool_modes_are_errors(mode: str) -> None:
    with pytest.raises(ConfigurationError, match="unknown tool mode"):
        build_request([], ChatOptions(tools=(SPEC,), tool_mode=mode), default_model="m")


@pytest.mark.parametrize(
    ("model", "level"),
    [
        ("gemini-3-pro-preview", True),
        ("models/gemini-3.1-flash", True),
        ("gemini-10-ultra", True),
        ("gemini-2.5-flash", False),
        ("gemini-2.0-flash", False),
        ("gemini-flash-latest", False),
        ("gemma-3-27b-it", False),
    ],
)
def test_which_models_take_a_thinking_level(model: str, level: bool) -> None:
    assert uses_thinking_level(model) is level


def test_every_effort_has_a_budget_and_a_level() -> None:
    efforts = {"none", "low", "medium", "high", "extra_high"}

    assert set(THINKING_BUDGETS) == set(THINKING_LEVELS) == efforts
    assert sorted(THINKING_BUDGETS.values()) == [
        THINKING_BUDGETS[e] for e in ("none", "low", "medium", "high", "extra_high")
    ]
    assert to_thinking_config("none", "gemini-2.5-flash") == types.ThinkingConfig(thinking_budget=0)
    assert to_thinking_config("low", "gemini-2.5-pro") == types.ThinkingConfig(
        thinking_budget=1024, include_thoughts=True
    )
    assert to_thinking_config("none", "gemini-3-flash") == types.ThinkingConfig(
        thinking_level=types.ThinkingLevel.MINIMAL, include_thoughts=True
    )


# -- schemas --------------------------------------------------------------------------------------------------------


def test_schema_keywords_gemini_rejects_are_rewritten_or_left_out() -> None:
    schema: dict[str, JsonValue] = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "urn:tool",
        "title": "Args",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "mode": {"const": "fast"},
            "level": {"enum": [1, 2, 3], "type": "integer", "description": "How hard."},
            "when": {"type": "string", "format": "date-time"},
            "site": {"type": "string", "format": "uri", "examples": ["https://x"]},
            "size": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 10.5},
            "tags": {"type": "array"},
            "pair": {"type": "array", "items": [{"type": "integer"}, {"type": "string"}], "minItems": 2},
            "either": {"type": ["string", "integer"]},
            "flag": {"type": "boolean", "default": False},
            "anything": {},
            "bounded": {"maximum": 3},
            "listed": {"items": {"type": "integer"}},
        },
        "required": ["mode", "missing"],
    }

    assert to_gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "mode": {"enum": ["fast"], "type": "string"},
            "level": {"type": "integer", "description": "How hard. (one of: 1, 2, 3)"},
            "when": {"type": "string", "format": "date-time"},
            "site": {"type": "string", "description": "Format: uri."},
            "size": {"type": "number", "nullable": True, "maximum": 10.5},
            "tags": {"type": "array", "items": {"type": "string"}},
            "pair": {"type": "array", "minItems": 2, "items": {"type": "integer"}},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "flag": {"type": "boolean", "description": "Default: false."},
            "anything": {"type": "string"},
            "bounded": {"type": "number", "maximum": 3},
            "listed": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["mode"],
    }


def test_references_are_inlined_and_cycles_cut() -> None:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "description": "A tree node.",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
        "definitions": {"Color": {"type": "string", "enum": ["red", "blue"]}},
        "properties": {
            "root": {"$ref": "#/$defs/Node"},
            "color": {"$ref": "#/definitions/Color", "description": "Paint."},
            "broken": {"$ref": "#/$defs/Missing"},
        },
    }

    rewritten = to_gemini_schema(schema)

    assert rewritten is not None
    properties = rewritten["properties"]
    assert isinstance(properties, dict)
    assert properties["root"] == {
        "type": "object",
        "description": "A tree node.",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"type": "object", "description": "A tree node."}},
        },
    }
    assert properties["color"] == {"type": "string", "description": "Paint.", "enum": ["red", "blue"]}
    assert properties["broken"] == {"type": "object"}
    assert "$defs" not in rewritten and "definitions" not in rewritten


def test_optional_unions_and_all_of_are_flattened() -> None:
    schema: dict[str, JsonValue] = {
        "type": "object",
        "properties": {
            "maybe": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}], "description": "Maybe text."},
            "choice": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "both": {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "integer"}}, "required": ["b", "a"]},
                ]
            },
        },
    }

    rewritten = to_gemini_schema(schema)

    assert rewritten is not None
    assert rewritten["properties"] == {
        "maybe": {"description": "Maybe text.", "nullable": True, "type": "string", "maxLength": 3},
        "choice": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "both": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    }


def test_the_root_is_always_an_object() -> None:
    assert to_gemini_schema({"properties": {"a": {"type": "string"}}, "anyOf": [{"required": ["a"]}]}) == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
    }


@pytest.mark.parametrize(
    "schema",
    [{}, {"type": "object"}, {"type": "object", "properties": {}}, {"type": "string"}, {"properties": "nonsense"}],
)
def test_schemas_without_properties_mean_no_parameters(schema: dict[str, JsonValue]) -> None:
    assert to_gemini_schema(schema) is None


_KEYWORDS = st.sampled_from(
    [
        "type", "description", "enum", "const", "format", "items", "properties", "required", "anyOf", "oneOf",
        "allOf", "$ref", "additionalProperties", "$schema", "default", "minimum", "minLength", "nullable",
        "exclusiveMaximum", "title", "examples", "patternProperties",
    ]
)  # fmt: skip
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, width=32), st.text(max_size=6),
    st.sampled_from(["string", "integer", "number", "boolean", "array", "object", "null", "date-time", "#/$defs/A"]),
)  # fmt: skip
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.one_of(_KEYWORDS, st.text(max_size=4)), inner, max_size=4)
    ),
    max_leaves=25,
)
_GEMINI_KEYWORDS = {
    "type", "description", "enum", "format", "items", "properties", "required", "anyOf", "nullable", "minimum",
    "maximum", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "pattern",
    "propertyOrdering",
}  # fmt: skip


def _keywords(schema: JsonValue) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            found |= {keyword for sub in value.values() for keyword in _keywords(sub)}
        elif key == "items":
            found |= _keywords(value)
        elif key == "anyOf" and isinstance(value, list):
            found |= {keyword for sub in value for keyword in _keywords(sub)}
    return found


@settings(max_examples=150, deadline=None)
@given(properties=st.dictionaries(st.text(min_size=1, max_size=4), _VALUES, min_size=1, max_size=4), defs=_VALUES)
def test_any_schema_becomes_one_the_sdk_accepts_with_only_keywords_gemini_knows(
    properties: dict[str, JsonValue], defs: JsonValue
) -> None:
    schema: dict[str, JsonValue] = {"type": "object", "properties": properties, "$defs": {"A": defs}}

    rewritten = to_gemini_schema(schema)

    assert rewritten is not None
    assert _keywords(rewritten) <= _GEMINI_KEYWORDS
    types.Schema.model_validate(rewritten)  # raises on anything outside the SDK's Schema model


# -- streaming ------------------------------------------------------------------------------------------------------


def test_accumulator_keeps_thoughts_apart_and_reports_the_last_usage_last() -> None:
    accumulator = StreamAccumulator(ids(), MODEL)
    chunks = [
        response([{"text": "plan", "thought": True}], usage={"promptTokenCount": 3}),
        response([{"text": "Hi"}, {"text": " there"}], usage={"promptTokenCount": 3, "candidatesTokenCount": 1}),
        response(
            [{"text": "", "thoughtSignature": "c2ln"}],
            finish="STOP",
            usage={"promptTokenCount": 3, "candidatesTokenCount": 2, "thoughtsTokenCount": 5},
        ),
    ]

    updates = [update for chunk in chunks for update in accumulator.feed(chunk)] + accumulator.finish()

    assert updates == [
        ChatUpdate(thinking_delta="plan"),
        ChatUpdate(text_delta="Hi"),
        ChatUpdate(text_delta=" there"),
        ChatUpdate(thinking_block=text_signature_part("plan", b"sig", MODEL)),  # the answer's signature closes it
        ChatUpdate(finish_reason="stop"),
        ChatUpdate(usage=Usage(input_tokens=3, output_tokens=7, reasoning_tokens=5)),
    ]
    assert accumulator.finish() == []


def test_accumulator_holds_calls_until_the_finish_reason_with_their_gemini_state() -> None:
    accumulator = StreamAccumulator(ids(), MODEL)

    first = accumulator.feed(
        response([{"functionCall": {"name": "a", "args": {"k": "v"}}, "thoughtSignature": "c2ln"}])
    )
    second = accumulator.feed(response([{"functionCall": {"id": "fc-2", "name": "b"}}], finish="STOP"))

    assert first == []
    (update,) = second
    assert update.finish_reason == "tool_calls"
    assert [(call.call_id, call.name, call.arguments) for call in update.tool_calls] == [
        ("gen_1", "a", {"k": "v"}),
        ("fc-2", "b", {}),
    ]
    first_call, second_call = update.tool_calls
    assert first_call.opaque == call_state(None, b"sig", MODEL)
    assert wire_call_of(second_call, MODEL) == WireCall(wire_id="fc-2", signature=None)


def test_calls_of_a_stream_without_finish_reason_are_flushed_at_the_end() -> None:
    accumulator = StreamAccumulator(ids(), MODEL)

    assert accumulator.feed(response([{"functionCall": {"name": "t", "args": {}}}])) == []
    assert accumulator.finish() == [
        ChatUpdate(tool_calls=(ToolCallPart(call_id="gen_1", name="t", arguments={}, arguments_text="{}"),))
    ]


def test_a_blocked_prompt_finishes_the_stream_once() -> None:
    accumulator = StreamAccumulator(ids(), MODEL)

    assert accumulator.feed(response(blocked="SAFETY", usage={"promptTokenCount": 4})) == [
        ChatUpdate(finish_reason="content_filter")
    ]
    assert accumulator.finish() == [ChatUpdate(usage=Usage(input_tokens=4, output_tokens=None))]


@pytest.mark.parametrize(
    ("raw", "has_calls", "expected"),
    [
        (None, False, None),
        ("STOP", False, "stop"),
        ("MAX_TOKENS", False, "length"),
        ("SAFETY", False, "content_filter"),
        ("RECITATION", False, "content_filter"),
        ("PROHIBITED_CONTENT", False, "content_filter"),
        ("MALFORMED_FUNCTION_CALL", False, "stop"),
        ("OTHER", False, "stop"),
        ("STOP", True, "tool_calls"),
        (types.FinishReason.MAX_TOKENS, False, "length"),
    ],
)
def test_finish_reasons(raw: str | None, has_calls: bool, expected: str | None) -> None:
    assert to_finish_reason(raw, has_tool_calls=has_calls) == expected


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"promptTokenCount": 5, "candidatesTokenCount": 2, "thoughtsTokenCount": 3},
            Usage(input_tokens=5, output_tokens=5, reasoning_tokens=3),
        ),
        ({"promptTokenCount": 5}, Usage(input_tokens=5)),
        ({"thoughtsTokenCount": 4}, Usage(output_tokens=4, reasoning_tokens=4)),
        ({"totalTokenCount": 9}, None),
    ],
)
def test_usage(usage: dict[str, int], expected: Usage | None) -> None:
    assert to_usage(types.GenerateContentResponseUsageMetadata.model_validate(usage)) == expected


# -- whole responses ------------------------------------------------------------------------------------------------


def test_whole_response_with_thoughts_text_and_calls() -> None:
    answer = response(
        [
            {"text": "why", "thought": True},
            {"text": "Reading "},
            {"functionCall": {"name": "read_file", "args": {"path": "ü.txt"}}, "thoughtSignature": "c2ln"},
            {"text": "both."},
        ],
        finish="STOP",
        usage={"promptTokenCount": 2, "candidatesTokenCount": 3},
    )

    result = to_chat_response(answer, ids(), MODEL)

    assert result.message.parts == (
        ThinkingPart(text="why"),
        TextPart(text="Reading both."),
        ToolCallPart(
            call_id="gen_1",
            name="read_file",
            arguments={"path": "ü.txt"},
            arguments_text='{"path":"ü.txt"}',
            opaque=OpaqueState(provider="google", data='{"id": null, "signature": "c2ln"}', model=MODEL),
        ),
    )
    assert (result.usage, result.finish_reason) == (Usage(input_tokens=2, output_tokens=3), "tool_calls")


def test_a_response_without_candidates_is_an_empty_message() -> None:
    empty = to_chat_response(response(), ids(), MODEL)
    blocked = to_chat_response(response(blocked="OTHER"), ids(), MODEL)

    assert (empty.message, empty.finish_reason) == (ChatMessage(role=Role.ASSISTANT), None)
    assert (blocked.message, blocked.finish_reason) == (ChatMessage(role=Role.ASSISTANT), "content_filter")


# -- base URLs ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://generativelanguage.googleapis.com/v1beta/", ("https://generativelanguage.googleapis.com/", "v1beta")),
        (
            "https://generativelanguage.googleapis.com",
            ("https://generativelanguage.googleapis.com/", DEFAULT_API_VERSION),
        ),
        ("http://127.0.0.1:8080/proxy/v1", ("http://127.0.0.1:8080/proxy/", "v1")),
        ("http://127.0.0.1:8080/proxy/v1alpha/", ("http://127.0.0.1:8080/proxy/", "v1alpha")),
        ("http://v1/", ("http://v1/", DEFAULT_API_VERSION)),
        ("http://127.0.0.1:8080/gemini", ("http://127.0.0.1:8080/gemini/", DEFAULT_API_VERSION)),
    ],
)
def test_split_base_url(url: str, expected: tuple[str, str]) -> None:
    assert split_base_url(url) == expected


# -- errors ---------------------------------------------------------------------------------------------------------


def api_error(code: int, message: str, status: str, *, details: list[Any] | None = None, headers: Any = None) -> Any:
    body: dict[str, Any] = {"error": {"code": code, "message": message, "status": status}}
    if details is not None:
        body["error"]["details"] = details
    response = SimpleNamespace(headers=headers) if headers is not None else None
    cls = genai_errors.ClientError if code < 500 else genai_errors.ServerError
    return cls(code, body, response)


@pytest.mark.parametrize(
    ("code", "status", "retryable"),
    [
        (400, "INVALID_ARGUMENT", False),
        (401, "UNAUTHENTICATED", False),
        (403, "PERMISSION_DENIED", False),
        (404, "NOT_FOUND", False),
        (408, "DEADLINE_EXCEEDED", True),
        (409, "ABORTED", True),
        (429, "RESOURCE_EXHAUSTED", True),
        (500, "INTERNAL", True),
        (503, "UNAVAILABLE", True),
        (504, "DEADLINE_EXCEEDED", True),
    ],
)
def test_api_errors(code: int, status: str, retryable: bool) -> None:
    error = translate_error(api_error(code, "nope", status), provider="google")

    assert type(error) is ProviderError
    assert (error.status, error.retryable, error.provider) == (code, retryable, "google")
    assert str(error) == f"google returned HTTP {code} {status}: nope"


@pytest.mark.parametrize(
    ("message", "window"),
    [
        ("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", 1_048_576),
        ("The input token count exceeds the maximum number of tokens allowed 32768.", 32_768),
    ],
)
def test_token_count_overflow(message: str, window: int) -> None:
    error = translate_error(api_error(400, message, "INVALID_ARGUMENT"), provider="google")

    assert isinstance(error, ContextOverflowError)
    assert (error.window, error.status, error.retryable) == (window, 400, False)
    assert "400 INVALID_ARGUMENT" in str(error)


def test_an_error_without_an_http_status_is_judged_by_googles_code() -> None:
    transient = genai_errors.APIError(0, {"error": {"message": "try later", "status": "UNAVAILABLE"}})
    final = genai_errors.APIError(0, {"error": {"message": "bad", "status": "FAILED_PRECONDITION"}})

    assert [
        (e.status, e.retryable, str(e))
        for e in (translate_error(transient, provider="g"), translate_error(final, provider="g"))
    ] == [
        (None, True, "g reported an error: try later"),
        (None, False, "g reported an error: bad"),
    ]


def test_secrets_are_redacted_and_long_messages_clipped() -> None:
    leaked = translate_error(
        api_error(400, "key AIza-secret-1 is bad", "INVALID_ARGUMENT"), provider="g", secrets=("AIza-secret-1",)
    )
    long = translate_error(api_error(500, "x" * 5000, "INTERNAL"), provider="g")

    assert str(leaked) == "g returned HTTP 400 INVALID_ARGUMENT: key [redacted] is bad"
    assert len(str(long)) < 600


def test_an_error_body_without_a_message_still_says_something() -> None:
    error = translate_error(genai_errors.ServerError(502, {"message": None, "status": "Bad Gateway"}), provider="g")

    assert error.status == 502 and error.retryable is True
    assert "502" in str(error)


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (TimeoutError(), "did not answer in time"),
        (aiohttp.ServerDisconnectedError(), "could not connect to g"),
        (aiohttp.ClientPayloadError("Response payload is not completed"), "payload is not completed"),
        (ConnectionRefusedError(111, "Connect call failed"), "Connect call failed"),
    ],
)
def test_transport_failures_are_retryable(exc: BaseException, words: str) -> None:
    error = translate_error(exc, provider="g")

    assert (error.status, error.retryable) == (None, True)
    assert words in str(error)


def test_an_unreadable_answer_is_not_retried_nor_quoted() -> None:
    exc = genai_errors.UnknownApiResponseError("Failed to parse response as JSON. Raw response: <html>secret</html>")

    error = translate_error(exc, provider="g")

    assert (error.retryable, str(error)) == (False, "g sent an answer that is not valid JSON")


RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


@pytest.mark.parametrize(
    ("details", "headers", "seconds"),
    [
        ([{"@type": RETRY_INFO, "retryDelay": "37s"}], None, 37.0),
        ([{"@type": "type.googleapis.com/google.rpc.Help"}, {"@type": RETRY_INFO, "retryDelay": "1.5s"}], None, 1.5),
        ([{"@type": RETRY_INFO, "retryDelay": {"seconds": "2", "nanos": 500_000_000}}], None, 2.5),
        ([{"@type": RETRY_INFO, "retryDelay": "soon"}], None, None),
        ([{"@type": RETRY_INFO, "retryDelay": "37s"}], {"Retry-After": "4"}, 4.0),
        ([{"@type": RETRY_INFO, "retryDelay": "37s"}], {"retry-after": "later"}, 37.0),
        ([], {"RETRY-AFTER": "-3"}, 0.0),
        (None, {}, None),
    ],
)
def test_retry_after_seconds(details: list[Any] | None, headers: dict[str, str] | None, seconds: float | None) -> None:
    exc = api_error(429, "slow down", "RESOURCE_EXHAUSTED", details=details, headers=headers)
    translated = translate_error(exc, provider="g")

    assert translated.retry_after == seconds


def test_retry_after_as_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)

    seconds = translate_error(
        api_error(503, "busy", "UNAVAILABLE", headers={"Retry-After": when}), provider="g"
    ).retry_after

    assert seconds is not None and 25 <= seconds <= 30
