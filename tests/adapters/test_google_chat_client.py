"""GoogleGenAIChatClient through the real google-genai SDK against a loopback server speaking the Gemini API."""

from __future__ import annotations

import base64
import itertools
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import aiohttp
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from ironhive.adapters.google.client import GoogleGenAIChatClient
from ironhive.adapters.google.mapping import DUMMY_THOUGHT_SIGNATURE
from ironhive.domain.errors import ConfigurationError, ContextOverflowError, ProviderError
from ironhive.ports.chat import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatUpdate,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)
from tests.support.gemini_server import DEFAULT_SIGNATURE, LoopbackGeminiServer, ScriptedCall, error_body

API_KEY = "AIzaSy-loopback-secret-key-0123456789"
HELLO = [ChatMessage.of_text(Role.USER, "Say hello")]
READ_FILE = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Where the file is."},
            "limit": {"type": ["integer", "null"], "minimum": 1, "default": 200},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)


@pytest.fixture
def server() -> Iterator[LoopbackGeminiServer]:
    with LoopbackGeminiServer(api_key=API_KEY) as running:
        yield running


@pytest.fixture
async def client(server: LoopbackGeminiServer) -> AsyncIterator[GoogleGenAIChatClient]:
    counter = itertools.count(1)
    async with GoogleGenAIChatClient(
        api_key=API_KEY,
        model="gemini-2.5-flash",
        base_url=server.base_url,
        id_factory=lambda: f"generated_{next(counter)}",
    ) as chat:
        yield chat


async def collect(
    client: GoogleGenAIChatClient, options: ChatOptions | None = None, messages: list[ChatMessage] | None = None
) -> list[ChatUpdate]:
    stream = client.get_streaming_response(messages or HELLO, options or ChatOptions())
    return [update async for update in stream]


def camel(value: Any) -> Any:
    """Key names in camelCase: the SDK writes some nested config fields in snake_case, which Google also accepts."""
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key): camel(item) for key, item in value.items()}
    if isinstance(value, list):
        return [camel(item) for item in value]
    return value


# -- text -----------------------------------------------------------------------------------------------------------


async def test_streamed_text_arrives_as_ordered_deltas_then_finish_then_usage(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_text("Hello there", chunks=["Hel", "lo", " the", "re"], usage=(10, 4))

    updates = await collect(client)

    assert [update.text_delta for update in updates if update.text_delta] == ["Hel", "lo", " the", "re"]
    assert [update.finish_reason for update in updates if update.finish_reason] == ["stop"]
    assert updates[-1] == ChatUpdate(usage=Usage(input_tokens=10, output_tokens=4))
    (request,) = server.requests
    assert (request.api_version, request.model, request.method) == (
        "v1beta",
        "gemini-2.5-flash",
        "streamGenerateContent",
    )
    assert request.query == {"alt": "sse"}
    assert request.headers["x-goog-api-key"] == API_KEY
    assert request.body["contents"] == [{"role": "user", "parts": [{"text": "Say hello"}]}]


async def test_usage_is_the_last_chunks_running_total_not_a_sum(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_text("abc", chunks=["a", "b", "c"], usage=(7, 30), thoughts_tokens=12)

    updates = await collect(client)

    assert [update.usage for update in updates if update.usage] == [
        Usage(input_tokens=7, output_tokens=42, reasoning_tokens=12)
    ]


async def test_non_streaming_text_with_usage_and_finish_reason(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_text("Hi!", usage=(7, 1), finish_reason="MAX_TOKENS")

    response = await client.get_response(HELLO, ChatOptions())

    assert response.message == ChatMessage(role=Role.ASSISTANT, parts=(TextPart(text="Hi!"),))
    assert response.usage == Usage(input_tokens=7, output_tokens=1)
    assert response.finish_reason == "length"
    assert server.requests[0].method == "generateContent"


@pytest.mark.parametrize(("reason", "expected"), [("SAFETY", "content_filter"), ("RECITATION", "content_filter")])
async def test_filtered_answers_finish_for_content_filter(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient, reason: str, expected: str
) -> None:
    server.enqueue_text("Par", finish_reason=reason).enqueue_text("", finish_reason=reason)

    streamed = await collect(client)
    whole = await client.get_response(HELLO, ChatOptions())

    assert [update.finish_reason for update in streamed if update.finish_reason] == [expected]
    assert whole.finish_reason == expected


async def test_a_blocked_prompt_finishes_for_content_filter_without_a_message(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_blocked().enqueue_blocked("PROHIBITED_CONTENT")

    streamed = await collect(client)
    whole = await client.get_response(HELLO, ChatOptions())

    assert [update.finish_reason for update in streamed if update.finish_reason] == ["content_filter"]
    assert not any(update.text_delta for update in streamed)
    assert whole.message == ChatMessage(role=Role.ASSISTANT)
    assert whole.finish_reason == "content_filter"


async def test_client_satisfies_the_chat_client_port(client: GoogleGenAIChatClient) -> None:
    assert isinstance(client, ChatClient)
    assert client.model == "gemini-2.5-flash"
    assert client.provider_name == "google"


# -- thoughts -------------------------------------------------------------------------------------------------------


async def test_thought_summaries_stream_as_thinking_before_the_answer(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_text("42", chunks=["4", "2"], thoughts=["**Multiplying**\n", "Six times seven."])

    updates = await collect(client, ChatOptions(reasoning_effort="medium"))

    streamed = [(u.thinking_delta, u.text_delta) for u in updates if u.thinking_delta or u.text_delta]
    assert streamed == [("**Multiplying**\n", ""), ("Six times seven.", ""), ("", "4"), ("", "2")]


async def test_non_streamed_thoughts_are_a_thinking_part_and_never_go_back(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_text("42", thoughts="Six times seven.").enqueue_text("Yes.")

    response = await client.get_response(HELLO, ChatOptions())
    await client.get_response([*HELLO, response.message, ChatMessage.of_text(Role.USER, "Sure?")], ChatOptions())

    assert response.message.parts == (ThinkingPart(text="Six times seven."), TextPart(text="42"))
    assert server.requests[1].body["contents"] == [
        {"role": "user", "parts": [{"text": "Say hello"}]},
        {"role": "model", "parts": [{"text": "42"}]},
        {"role": "user", "parts": [{"text": "Sure?"}]},
    ]


# -- function calls -------------------------------------------------------------------------------------------------


async def test_a_tool_round_trip_maps_results_back_with_the_signature(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_function_calls(
        [("read_file", {"path": "README.md"}), ("read_file", {"path": "docs/a.md", "limit": 5})], usage=(30, 12)
    ).enqueue_text("Both read.")

    updates = await collect(client, ChatOptions(tools=(READ_FILE,)))

    (call_update,) = [update for update in updates if update.tool_calls]
    assert call_update.finish_reason == "tool_calls"
    assert tuple(replace(call, opaque=None) for call in call_update.tool_calls) == (
        ToolCallPart(
            call_id="generated_1",
            name="read_file",
            arguments={"path": "README.md"},
            arguments_text='{"path":"README.md"}',
        ),
        ToolCallPart(
            call_id="generated_2",
            name="read_file",
            arguments={"path": "docs/a.md", "limit": 5},
            arguments_text='{"path":"docs/a.md","limit":5}',
        ),
    )
    # The signature travels in the call's state: a client that never saw the call sends it back all the same.
    fresh = GoogleGenAIChatClient(api_key=API_KEY, model="gemini-2.5-flash", base_url=server.base_url)
    assert updates[-1].usage == Usage(input_tokens=30, output_tokens=12)

    assistant = ChatMessage(role=Role.ASSISTANT, parts=call_update.tool_calls)
    results = ChatMessage(
        role=Role.TOOL,
        parts=(
            ToolResultPart(call_id="generated_2", name="read_file", result="no such file", success=False),
            ToolResultPart(call_id="generated_1", name="read_file", result="# ironhive", success=True),
        ),
    )
    async with fresh:
        response = await fresh.get_response([*HELLO, assistant, results], ChatOptions(tools=(READ_FILE,)))

    assert response.message.text == "Both read."
    assert server.requests[1].body["contents"] == [
        {"role": "user", "parts": [{"text": "Say hello"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "read_file", "args": {"path": "README.md"}},
                    "thoughtSignature": DEFAULT_SIGNATURE,
                },
                {"functionCall": {"name": "read_file", "args": {"path": "docs/a.md", "limit": 5}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "read_file", "response": {"result": "# ironhive"}}},
                {"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}},
            ],
        },
    ]


async def test_ids_gemini_sends_are_kept_and_sent_back(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_function_calls([ScriptedCall(name="get_time", args={}, call_id="fc-7")], signature=None)
    server.enqueue_text("Noon.")

    response = await client.get_response(HELLO, ChatOptions())
    (call,) = response.message.tool_calls
    result = ChatMessage(
        role=Role.TOOL, parts=(ToolResultPart(call_id="fc-7", name="get_time", result="12:00", success=None),)
    )
    await client.get_response([*HELLO, response.message, result], ChatOptions())

    assert (call.call_id, call.name, call.arguments, call.arguments_text) == ("fc-7", "get_time", {}, "{}")
    assert response.finish_reason == "tool_calls"
    model_turn, answer_turn = server.requests[1].body["contents"][1:]
    assert model_turn["parts"] == [
        {
            "functionCall": {"id": "fc-7", "name": "get_time", "args": {}},
            "thoughtSignature": base64.b64encode(DUMMY_THOUGHT_SIGNATURE).decode(),
        }
    ]
    assert answer_turn["parts"] == [
        {"functionResponse": {"id": "fc-7", "name": "get_time", "response": {"result": "12:00"}}}
    ]


async def test_calls_the_client_never_saw_go_back_with_the_dummy_signature(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_text("ok")
    restored = [
        *HELLO,
        ChatMessage(
            role=Role.ASSISTANT,
            parts=(
                TextPart(text="Let me look."),
                ToolCallPart(call_id="call_old", name="read_file", arguments={"path": "a"}),
                ToolCallPart(call_id="call_older", name="read_file", arguments=None, arguments_text="{bad"),
            ),
        ),
        ChatMessage(
            role=Role.USER,
            parts=(
                ToolResultPart(call_id="call_old", name="read_file", result="A", success=True),
                ToolResultPart(call_id="call_older", name="read_file", result="bad arguments", success=False),
                TextPart(text="And now?"),
            ),
        ),
    ]

    await client.get_response(restored, ChatOptions())

    dummy = base64.b64encode(DUMMY_THOUGHT_SIGNATURE).decode()
    assert server.requests[0].body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"text": "Let me look."},
                {"functionCall": {"name": "read_file", "args": {"path": "a"}}, "thoughtSignature": dummy},
                {"functionCall": {"name": "read_file", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "read_file", "response": {"result": "A"}}},
                {"functionResponse": {"name": "read_file", "response": {"error": "bad arguments"}}},
                {"text": "And now?"},
            ],
        },
    ]


async def test_text_before_function_calls_streams_first(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_function_calls([("list_directory", {"path": "."})], text="Looking.", thoughts=["Plan."])

    updates = await collect(client)

    assert [(u.thinking_delta, u.text_delta, len(u.tool_calls)) for u in updates] == [
        ("Plan.", "", 0),
        ("", "Looking.", 0),
        ("", "", 1),
    ]


# -- request mapping ------------------------------------------------------------------------------------------------


async def test_request_carries_system_instruction_tools_tool_config_and_generation_config(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_text("Done.")
    conversation = [
        ChatMessage.of_text(Role.SYSTEM, "You are terse."),
        ChatMessage.of_text(Role.SYSTEM, "Answer in English."),
        ChatMessage.of_text(Role.USER, "Read README.md"),
        ChatMessage.of_text(Role.USER, "Please."),
    ]
    options = ChatOptions(
        model="gemini-2.5-pro",
        temperature=0.2,
        max_output_tokens=512,
        tools=(READ_FILE,),
        tool_mode="require:read_file",
        reasoning_effort="high",
    )

    await client.get_response(conversation, options)

    (request,) = server.requests
    body = camel(request.body)
    assert request.model == "gemini-2.5-pro"
    assert body["systemInstruction"]["parts"] == [{"text": "You are terse.\n\nAnswer in English."}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Read README.md"}, {"text": "Please."}]}]
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 512,
        "thinkingConfig": {"thinkingBudget": 16384, "includeThoughts": True},
    }
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["read_file"]}}
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {
                            "path": {"type": "STRING", "description": "Where the file is."},
                            "limit": {
                                "type": "INTEGER",
                                "nullable": True,
                                "minimum": 1,
                                "description": "Default: 200.",
                            },
                        },
                        "required": ["path"],
                    },
                }
            ]
        }
    ]


@pytest.mark.parametrize(
    ("mode", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("require_any", {"mode": "ANY"}),
    ],
)
async def test_tool_modes_on_the_wire(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient, mode: str, config: dict[str, Any]
) -> None:
    server.enqueue_text("ok")

    await client.get_response(HELLO, ChatOptions(tools=(READ_FILE,), tool_mode=mode))

    assert camel(server.requests[0].body)["toolConfig"] == {"functionCallingConfig": config}


async def test_gemini_3_gets_a_thinking_level(server: LoopbackGeminiServer, client: GoogleGenAIChatClient) -> None:
    server.enqueue_text("ok").enqueue_text("ok")

    await client.get_response(HELLO, ChatOptions(model="gemini-3-flash-preview", reasoning_effort="low"))
    await client.get_response(HELLO, ChatOptions(reasoning_effort="none"))

    level, off = (camel(request.body)["generationConfig"]["thinkingConfig"] for request in server.requests)
    assert level == {"thinkingLevel": "LOW", "includeThoughts": True}
    assert off == {"thinkingBudget": 0}


async def test_unset_options_are_left_out(server: LoopbackGeminiServer, client: GoogleGenAIChatClient) -> None:
    server.enqueue_text("a").enqueue_text("b")

    await client.get_response(HELLO, ChatOptions())
    await client.get_response(HELLO, ChatOptions(tools=(), tool_mode="none"))

    for request in server.requests:
        assert set(request.body) == {"contents", "generationConfig"}
        assert request.body["generationConfig"] == {}


async def test_a_base_url_naming_the_version_works_too(server: LoopbackGeminiServer) -> None:
    server.enqueue_text("hi")

    async with GoogleGenAIChatClient(
        api_key=API_KEY, model="gemini-test", base_url=server.base_url + "v1beta/"
    ) as chat:
        response = await chat.get_response(HELLO, ChatOptions())

    assert response.message.text == "hi"
    assert server.requests[0].api_version == "v1beta"


# -- errors ---------------------------------------------------------------------------------------------------------


async def test_rate_limit_is_retryable_and_reads_the_retry_delay(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_rate_limit(retry_delay="37s")

    with pytest.raises(ProviderError) as caught:
        await client.get_response(HELLO, ChatOptions())

    error = caught.value
    assert (error.status, error.retryable, error.provider) == (429, True, "google")
    assert "429 RESOURCE_EXHAUSTED" in str(error) and "You exceeded your current quota" in str(error)
    assert isinstance(error.__cause__, genai_errors.ClientError)
    assert error.retry_after == 37.0
    assert len(server.requests) == 1  # the SDK did not retry on its own


async def test_rate_limit_on_a_stream_prefers_the_retry_after_header(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_rate_limit(retry_delay="37s", retry_after="5")

    with pytest.raises(ProviderError) as caught:
        await collect(client)

    assert (caught.value.status, caught.value.retryable) == (429, True)
    assert caught.value.retry_after == 5.0


@pytest.mark.parametrize(("enqueue", "status"), [("enqueue_internal", 500), ("enqueue_unavailable", 503)])
async def test_server_errors_are_retryable_and_not_retried(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient, enqueue: str, status: int
) -> None:
    getattr(server, enqueue)()

    with pytest.raises(ProviderError) as caught:
        await collect(client)

    assert (caught.value.status, caught.value.retryable) == (status, True)
    assert f"HTTP {status}" in str(caught.value)
    assert isinstance(caught.value.__cause__, genai_errors.ServerError)
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("enqueue", "status", "words"),
    [
        ("enqueue_unauthenticated", 401, "UNAUTHENTICATED"),
        ("enqueue_permission_denied", 403, "PERMISSION_DENIED"),
        ("enqueue_invalid_api_key", 400, "API key not valid"),
    ],
)
async def test_authentication_failures_are_not_retryable(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient, enqueue: str, status: int, words: str
) -> None:
    getattr(server, enqueue)()

    with pytest.raises(ProviderError) as caught:
        await client.get_response(HELLO, ChatOptions())

    assert (caught.value.status, caught.value.retryable) == (status, False)
    assert words in str(caught.value)
    assert caught.value.retry_after is None


async def test_a_wrong_key_is_rejected_and_never_shown() -> None:
    wrong_key = "AIzaSy-wrong-key-that-must-not-leak"
    with LoopbackGeminiServer(api_key=API_KEY) as server:
        server.enqueue_error(400, error_body(400, f"API key {wrong_key} not valid.", "INVALID_ARGUMENT"))
        async with GoogleGenAIChatClient(api_key=wrong_key, model="gemini-test", base_url=server.base_url) as chat:
            with pytest.raises(ProviderError) as unscripted:
                await chat.get_response(HELLO, ChatOptions())
        async with GoogleGenAIChatClient(api_key=API_KEY, model="gemini-test", base_url=server.base_url) as chat:
            with pytest.raises(ProviderError) as scripted:
                await chat.get_response(HELLO, ChatOptions(temperature=0.5))
        # The scripted error only quotes the wrong key; the key sent with that request was the right one.
        server.enqueue_error(400, error_body(400, f"API key {API_KEY} not valid.", "INVALID_ARGUMENT"))
        async with GoogleGenAIChatClient(api_key=API_KEY, model="gemini-test", base_url=server.base_url) as chat:
            with pytest.raises(ProviderError) as quoted:
                await chat.get_response(HELLO, ChatOptions())

    assert (unscripted.value.status, unscripted.value.retryable) == (400, False)
    assert "API key not valid" in str(unscripted.value) and wrong_key not in str(unscripted.value)
    assert wrong_key in str(scripted.value)  # not this client's key: nothing to hide
    assert API_KEY not in str(quoted.value) and "[redacted]" in str(quoted.value)
    assert all("Say hello" not in str(error.value) for error in (unscripted, scripted, quoted))


async def test_input_token_overflow_is_a_context_overflow_with_the_window(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_token_overflow(count=1_200_000, limit=1_048_576)

    with pytest.raises(ContextOverflowError) as caught:
        await client.get_response(HELLO, ChatOptions())

    assert caught.value.window == 1_048_576
    assert (caught.value.status, caught.value.retryable) == (400, False)


async def test_an_error_in_the_middle_of_a_stream_comes_after_the_text_before_it(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_stream_error("An internal error has occurred.", before=["Par", "tial"])
    received: list[str] = []

    with pytest.raises(ProviderError) as caught:
        async for update in client.get_streaming_response(HELLO, ChatOptions()):
            received.append(update.text_delta)

    assert received == ["Par", "tial"]
    assert (caught.value.status, caught.value.retryable) == (500, True)
    assert "An internal error has occurred." in str(caught.value)


async def test_connection_refused_is_retryable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with GoogleGenAIChatClient(
        api_key=API_KEY, model="gemini-test", base_url=f"http://127.0.0.1:{port}/"
    ) as chat:
        with pytest.raises(ProviderError) as caught:
            await chat.get_response(HELLO, ChatOptions())

    assert caught.value.retryable is True
    assert caught.value.status is None
    assert isinstance(caught.value.__cause__, aiohttp.ClientConnectionError)
    assert API_KEY not in str(caught.value)


async def test_a_slow_answer_times_out_as_retryable(server: LoopbackGeminiServer) -> None:
    server.enqueue_text("slow", chunks=list("slow"), chunk_delay=0.4)

    async with GoogleGenAIChatClient(
        api_key=API_KEY, model="gemini-test", base_url=server.base_url, timeout=0.3
    ) as chat:
        with pytest.raises(ProviderError, match="did not answer in time") as caught:
            await collect(chat)

    assert caught.value.retryable is True


async def test_an_exhausted_script_answers_500(client: GoogleGenAIChatClient) -> None:
    with pytest.raises(ProviderError, match="script ran out") as caught:
        await client.get_response(HELLO, ChatOptions())

    assert caught.value.retryable is True


# -- lifecycle ------------------------------------------------------------------------------------------------------


async def test_stopping_a_stream_early_releases_the_connection(
    server: LoopbackGeminiServer, client: GoogleGenAIChatClient
) -> None:
    server.enqueue_text("abcdef", chunks=list("abcdef"), chunk_delay=0.02).enqueue_text("next")
    stream = client.get_streaming_response(HELLO, ChatOptions())

    first = await anext(stream)
    await stream.aclose()

    assert first.text_delta == "a"
    assert (await client.get_response(HELLO, ChatOptions())).message.text == "next"


async def test_function_replies_see_the_request(server: LoopbackGeminiServer, client: GoogleGenAIChatClient) -> None:
    server.enqueue(lambda body: f"you said {body['contents'][-1]['parts'][0]['text']}")

    response = await client.get_response(HELLO, ChatOptions())

    assert response.message.text == "you said Say hello"


async def test_the_loopback_server_lists_models_in_googles_shape(server: LoopbackGeminiServer) -> None:
    async with aiohttp.ClientSession() as session:
        options = types.HttpOptions(base_url=server.base_url, api_version="v1beta", aiohttp_client=session)
        sdk = genai.Client(api_key=API_KEY, vertexai=False, http_options=options)
        try:
            pager = await sdk.aio.models.list(config={"page_size": 10})
            names = [model.name async for model in pager]
            first = pager.page[0]
        finally:
            await sdk.aio.aclose()
            sdk.close()

    assert names == ["models/gemini-test"]
    assert (first.input_token_limit, first.thinking) == (1_048_576, True)
    assert "generateContent" in (first.supported_actions or [])


def test_constructor_validates_settings() -> None:
    with pytest.raises(ConfigurationError, match="model"):
        GoogleGenAIChatClient(api_key=API_KEY, model=" ")
    with pytest.raises(ConfigurationError, match="API key"):
        GoogleGenAIChatClient(api_key="", model="gemini-test")
    with pytest.raises(ConfigurationError, match="timeout"):
        GoogleGenAIChatClient(api_key=API_KEY, model="gemini-test", timeout=0)


async def test_closing_an_unused_client_does_nothing() -> None:
    chat = GoogleGenAIChatClient(api_key=API_KEY, model="gemini-test")
    await chat.aclose()
    await chat.aclose()


def test_importing_the_adapter_package_imports_no_sdk() -> None:
    code = "import sys, ironhive.adapters.google; print('google.genai' in sys.modules, 'aiohttp' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "False False"
