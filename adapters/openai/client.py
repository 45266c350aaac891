"""OpenAIChatClient: the ChatClient port over an OpenAI-compatible chat-completions endpoint."""

from __future__ import annotations

import typing
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence

import openai
import pydantic

if typing.TYPE_CHECKING:
    from ironhive.adapters.openai.responses_mapping import ResponsesRequest

from ironhive.adapters.closing import AsyncClosing
from ironhive.adapters.openai.errors import translate_error
from ironhive.adapters.openai.mapping import CompletionRequest, StreamAccumulator, build_request, to_chat_response
from ironhive.domain.errors import ConfigurationError
from ironhive.domain.tool_calls import new_call_id
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatUpdate,
    OpaqueState,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)

# The SDK refuses to start without a key, but local OpenAI-compatible servers (Ollama, llama.cpp) need none.
_NO_KEY = "no-key"


class OpenAIChatClient(AsyncClosing):
    """A ``ChatClient`` that talks to OpenAI, or any server speaking its chat-completions API, through the openai SDK.

    The SDK client is built on first use, so constructing this object does no I/O. The SDK's own retries are off:
    ironhive decides about retrying from the ``ProviderError`` it raises.

    Args:
        api_key: The API key; may be empty only when ``base_url`` points at a server that needs none.
        model: The model asked for unless ``ChatOptions.model`` names another.
        base_url: The API's base URL (ending in ``/v1``); ``None`` means the SDK's default (OpenAI).
        provider_name: The name used in error messages and errors' ``provider``.
        timeout: Seconds one request may take.
        use_max_tokens_field: Send the output limit as the legacy ``max_tokens`` instead of
            ``max_completion_tokens`` (for servers that know only the former).
        id_factory: Makes ids for tool calls that arrive without one.
        default_headers: Headers sent with every request (e.g. Azure's ``api-key``).

    Raises:
        ConfigurationError: The model is empty, the timeout not positive, or the key missing for OpenAI itself.
    """

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        provider_name: str = "openai",
        timeout: float = 600.0,
        use_max_tokens_field: bool = False,
        id_factory: Callable[[], str] | None = None,
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        if not model.strip():
            raise ConfigurationError(f"{provider_name}: a model name is required")
        if timeout <= 0:
            raise ConfigurationError(f"{provider_name}: the timeout must be positive, not {timeout}")
        if not api_key and base_url is None:
            raise ConfigurationError(f"{provider_name}: an API key is required")
        self._api_key = api_key
        self._model = model
        self._base_url = base_url
        self._provider_name = provider_name
        self._timeout = timeout
        self._use_max_tokens_field = use_max_tokens_field
        self._id_factory = id_factory or new_call_id
        self._default_headers = dict(default_headers or {})
        self._sdk: openai.AsyncOpenAI | None = None

    @property
    def model(self) -> str:
        """The default model of this client."""
        return self._model

    @property
    def provider_name(self) -> str:
        """The provider's name as used in errors."""
        return self._provider_name

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """Answer ``messages`` in one piece.

        Raises:
            ProviderError: The request failed; ``ContextOverflowError`` when it did not fit the window.
            ConfigurationError: ``options.tool_mode`` is unknown.
        """
        request = build_request(
            messages, options, default_model=self._model, use_max_tokens_field=self._use_max_tokens_field
        )
        try:
            completion = await self._client().chat.completions.create(**request)
        except openai.OpenAIError as exc:
            raise translate_error(exc, provider=self._provider_name, secrets=(self._api_key,)) from exc
        return to_chat_response(completion, self._id_factory)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatUpdate, None]:
        """Answer ``messages`` as a stream of updates; tool calls arrive complete, usage last.

        ``aclose()`` on the returned generator ends the request early and releases its connection.

        Raises:
            ProviderError: The request failed, when it was sent or mid-stream.
            ConfigurationError: ``options.tool_mode`` is unknown.
        """
        request = build_request(
            messages, options, default_model=self._model, use_max_tokens_field=self._use_max_tokens_field
        )
        accumulator = StreamAccumulator(self._id_factory)
        try:
            stream = await self._client().chat.completions.create(
                **request, stream=True, stream_options={"include_usage": True}
            )
            async with stream:
                async for chunk in stream:
                    for update in accumulator.feed(chunk):
                        yield update
        except openai.OpenAIError as exc:
            raise translate_error(exc, provider=self._provider_name, secrets=(self._api_key,)) from exc
        for update in accumulator.finish():
            yield update

    async def aclose(self) -> None:
        """Close the SDK client (and its connection pool) if it was built."""
        if self._sdk is not None:
            sdk, self._sdk = self._sdk, None
            await sdk.close()

    def _client(self) -> openai.AsyncOpenAI:
        if self._sdk is None:
            from ironhive.adapters.tls import tls_context

            self._sdk = openai.AsyncOpenAI(
                api_key=self._api_key or _NO_KEY,
                base_url=self._base_url,
                timeout=self._timeout,
                max_retries=0,
                default_headers=self._default_headers or None,
                http_client=openai.DefaultAsyncHttpxClient(verify=tls_context(), timeout=self._timeout),
            )
        return self._sdk


def prepare_sdk() -> None:
    """Build, once in this process, what the SDK otherwise builds on every new process's first request.

    The SDK's pydantic models are completed lazily (``defer_build``): the first chunk parsed builds the schemas of
    every model it reaches, and the first request resolves the type hints of every ``TypedDict`` it is sent as, about
    20 ms of CPU. The warm process calls this before it forks, so each run forked from it starts with them built. No
    client is made and nothing is sent: only classes of the SDK change, identically for every configuration. A
    different SDK that lacks the internals used here only loses the head start.
    """
    from openai.types import Model
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    # The Responses path (OpenAI's own endpoint) parses every event through the stream-event union: about 0.15 s of
    # CPU on a run's first request unless built here.
    events = [member for union in typing.get_args(ResponseStreamEvent)[:1] for member in typing.get_args(union)]
    reachable_models((ChatCompletion, ChatCompletionChunk, Model, Response, *events))
    try:
        from openai._utils._transform import transform
        from openai.types.chat.completion_create_params import (
            CompletionCreateParamsNonStreaming,
            CompletionCreateParamsStreaming,
        )
        from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
    except ImportError:
        return
    request = _sample_request()
    transform({**request, "stream": True, "stream_options": {"include_usage": True}}, CompletionCreateParamsStreaming)
    transform(request, CompletionCreateParamsNonStreaming)
    transform({**_sample_responses_request(), "stream": True}, ResponseCreateParamsStreaming)


def reachable_models(roots: Sequence[type[pydantic.BaseModel]]) -> list[type[pydantic.BaseModel]]:
    """``roots`` and every pydantic model their fields can hold (through unions, lists and ``Optional``), each
    completed: its deferred schema, validator and serializer built."""
    found: list[type[pydantic.BaseModel]] = []
    pending: list[object] = list(roots)
    while pending:
        item = pending.pop()
        if isinstance(item, type) and issubclass(item, pydantic.BaseModel):
            if item not in found:
                found.append(item)
                item.model_rebuild()  # nothing when already complete; also resolves the fields' forward references
                pending.extend(field.annotation for field in item.model_fields.values())
        else:
            pending.extend(typing.get_args(item))
    return found


def _sample_messages() -> tuple[list[ChatMessage], ToolSpec]:
    """A conversation with every kind of message, and a tool."""
    call = ToolCallPart(call_id="call_1", name="tool", arguments={"a": 1})
    messages = [
        ChatMessage.of_text(Role.SYSTEM, "s"),
        ChatMessage.of_text(Role.USER, "u"),
        ChatMessage(role=Role.ASSISTANT, parts=(TextPart(text="a"), call)),
        ChatMessage(role=Role.TOOL, parts=(ToolResultPart(call_id="call_1", name="tool", result="r", success=True),)),
    ]
    tool = ToolSpec(name="tool", description="d", parameters={"type": "object", "properties": {}})
    return messages, tool


def _sample_request() -> CompletionRequest:
    """A request with every kind of message and a tool, as :func:`build_request` makes it."""
    messages, tool = _sample_messages()
    return build_request(messages, ChatOptions(tools=(tool,), max_output_tokens=1), default_model="m")


def _sample_responses_request() -> ResponsesRequest:
    """The same conversation as a Responses request of a reasoning model, encrypted reasoning sent back included."""
    from ironhive.adapters.openai.responses_mapping import build_responses_request

    messages, tool = _sample_messages()
    state = OpaqueState(provider="openai", data='{"id":"rs_1","encrypted_content":"e"}')
    messages[2] = ChatMessage(role=Role.ASSISTANT, parts=(ThinkingPart(text="t", opaque=state), *messages[2].parts))
    options = ChatOptions(tools=(tool,), max_output_tokens=1, tool_mode="auto", reasoning_effort="low")
    return build_responses_request(messages, options, default_model="gpt-5", provider="openai")


__all__ = ["OpenAIChatClient", "prepare_sdk", "reachable_models"]
