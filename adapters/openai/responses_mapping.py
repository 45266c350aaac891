"""Pure mapping between ironhive chat types and the OpenAI Responses API's requests, stream events and responses."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Required, TypedDict

from openai.types.responses import (
    FunctionToolParam,
    Response,
    ResponseFunctionToolCall,
    ResponseIncludable,
    ResponseInputItemParam,
    ResponseOutputItem,
    ResponseReasoningItem,
    ResponseReasoningItemParam,
    ResponseStreamEvent,
    ResponseUsage,
    ToolChoiceFunctionParam,
    ToolChoiceOptions,
)
from openai.types.shared_params import Reasoning

from ironhive.adapters.openai.mapping import REASONING_EFFORTS, tool_call_part
from ironhive.domain.errors import ProviderError
from ironhive.domain.tool_mode import ToolMode, parse_tool_mode
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatUpdate,
    ContentPart,
    FinishReason,
    OpaqueState,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)

_INCOMPLETE_REASONS: Mapping[str, FinishReason] = {"max_output_tokens": "length", "content_filter": "content_filter"}
# OpenAI's reasoning models reject ``temperature`` and are the ones that return reasoning items.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5", "codex")
_TRANSIENT_CODES = frozenset({"server_error", "rate_limit_exceeded", "overloaded_error", "timeout"})


class ResponsesRequest(TypedDict, total=False):
    """Keyword arguments for ``responses.create`` (the ``stream`` flag excluded)."""

    model: Required[str]
    input: Required[list[ResponseInputItemParam]]
    store: Required[bool]
    include: list[ResponseIncludable]
    reasoning: Reasoning
    temperature: float
    max_output_tokens: int
    tools: list[FunctionToolParam]
    tool_choice: ToolChoiceOptions | ToolChoiceFunctionParam


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` is one of OpenAI's reasoning models (o-series, GPT-5, Codex): they reason by default,
    return encrypted reasoning and take no ``temperature``."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return name.startswith(_REASONING_PREFIXES)


def reasoning_state(item: ResponseReasoningItem, *, provider: str, model: str | None) -> OpaqueState | None:
    """The opaque state of a reasoning item worth sending back (its id and encrypted content); ``None`` without."""
    if not item.encrypted_content:
        return None
    data = json.dumps({"id": item.id, "encrypted_content": item.encrypted_content}, separators=(",", ":"))
    return OpaqueState(provider=provider, data=data, model=model)


def _reasoning_item(part: ThinkingPart, provider: str) -> ResponseInputItemParam | None:
    """The reasoning item ``part`` came from, when this provider made it and its state reads back whole."""
    state = part.opaque
    if state is None or state.provider != provider:
        return None
    try:
        data = json.loads(state.data)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not data.get("encrypted_content"):
        return None
    item: ResponseReasoningItemParam = {
        "type": "reasoning",
        "id": data["id"],
        "summary": [{"type": "summary_text", "text": part.text}] if part.text else [],
        "encrypted_content": str(data["encrypted_content"]),
    }
    return item


def to_input_items(messages: Sequence[ChatMessage], *, provider: str) -> list[ResponseInputItemParam]:
    """Map a conversation onto Responses input items, in order.

    Tool results become ``function_call_output`` items, tool calls ``function_call`` items, and thinking that holds
    OpenAI's encrypted reasoning goes back as its ``reasoning`` item (required beside the calls it led to when nothing
    is stored); thinking without it (another provider's, or a summary only) is never sent.

    Args:
        messages: The conversation, oldest first.
        provider: This client's provider name: only reasoning state it made is sent back.
    """
    items: list[ResponseInputItemParam] = []
    for message in messages:
        if message.role in (Role.SYSTEM, Role.USER):
            items.extend(_output(result) for result in message.tool_results)
            if message.role is Role.SYSTEM:
                items.append({"type": "message", "role": "system", "content": message.text})
            elif message.text or not message.tool_results:
                items.append({"type": "message", "role": "user", "content": message.text})
        elif message.role is Role.TOOL:
            items.extend(_output(result) for result in message.tool_results)
        else:
            items.extend(_assistant_items(message.parts, provider))
    return items


def _output(result: ToolResultPart) -> ResponseInputItemParam:
    return {"type": "function_call_output", "call_id": result.call_id, "output": result.result}


def _assistant_items(parts: Sequence[ContentPart], provider: str) -> list[ResponseInputItemParam]:
    items: list[ResponseInputItemParam] = []
    for part in parts:
        match part:
            case ThinkingPart():
                if (reasoning := _reasoning_item(part, provider)) is not None:
                    items.append(reasoning)
            case TextPart():
                if part.text:
                    items.append({"type": "message", "role": "assistant", "content": part.text})
            case ToolCallPart():
                arguments = part.arguments_text if part.arguments_text.strip() else "{}"
                items.append(
                    {"type": "function_call", "call_id": part.call_id, "name": part.name, "arguments": arguments}
                )
            case ToolResultPart():
                items.append(_output(part))
    return items


def to_function_tool(spec: ToolSpec) -> FunctionToolParam:
    """Map a tool's spec onto a Responses function tool (not strict: ironhive's schemas need not be)."""
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": dict(spec.parameters),
        "strict": False,
    }


def to_tool_choice(tool_mode: str) -> ToolChoiceOptions | ToolChoiceFunctionParam:
    """Map a tool mode (see :func:`~ironhive.domain.tool_mode.parse_tool_mode`) onto ``tool_choice``.

    Raises:
        ConfigurationError: The mode is not one of the known forms.
    """
    match parse_tool_mode(tool_mode):
        case ToolMode(kind="tool", tool=str(name)):
            return {"type": "function", "name": name}
        case ToolMode(kind="any"):
            return "required"
        case ToolMode(kind="none"):
            return "none"
    return "auto"


def build_responses_request(
    messages: Sequence[ChatMessage], options: ChatOptions, *, default_model: str, provider: str
) -> ResponsesRequest:
    """Build the keyword arguments of one ``responses.create`` call; nothing is stored on OpenAI's side.

    A reasoning model (or any model asked for a reasoning effort) is asked for reasoning summaries and its encrypted
    reasoning, which later requests send back; ``temperature`` is left out for reasoning models, which reject it.

    Raises:
        ConfigurationError: The tool mode is unknown.
    """
    model = options.model or default_model
    request: ResponsesRequest = {"model": model, "input": to_input_items(messages, provider=provider), "store": False}
    reasoning_model = is_reasoning_model(model)
    if reasoning_model or options.reasoning_effort is not None:
        reasoning: Reasoning = {"summary": "auto"}
        if options.reasoning_effort is not None:
            reasoning["effort"] = REASONING_EFFORTS[options.reasoning_effort]
        request["reasoning"] = reasoning
        request["include"] = ["reasoning.encrypted_content"]
    if options.temperature is not None and not reasoning_model:
        request["temperature"] = options.temperature
    if options.max_output_tokens is not None:
        request["max_output_tokens"] = options.max_output_tokens
    if options.tools:
        request["tools"] = [to_function_tool(spec) for spec in options.tools]
    if options.tool_mode is not None:
        choice = to_tool_choice(options.tool_mode)
        if options.tools:  # the API rejects tool_choice without tools; with none offered every mode is the same
            request["tool_choice"] = choice
    return request


def to_usage(usage: ResponseUsage) -> Usage:
    """Map the API's token counts (cached input and reasoning output are within the totals) onto ``Usage``."""
    input_details = getattr(usage, "input_tokens_details", None)
    output_details = getattr(usage, "output_tokens_details", None)
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=None if input_details is None else input_details.cached_tokens,
        reasoning_tokens=None if output_details is None else output_details.reasoning_tokens,
    )


def finish_reason(response: Response, *, has_tool_calls: bool) -> FinishReason:
    """How a finished response ended: ``length`` when cut at ``max_output_tokens``, ``tool_calls`` when it made any."""
    if response.status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        return _INCOMPLETE_REASONS.get(reason or "", "length")
    return "tool_calls" if has_tool_calls else "stop"


def failure(code: str | None, message: str, *, provider: str) -> ProviderError:
    """The error of a response that failed after it started (no HTTP status): retryable when the code is transient."""
    text = message.strip() or "no message"
    return ProviderError(
        f"{provider} reported an error: {text}" + (f" ({code})" if code else ""),
        retryable=code in _TRANSIENT_CODES,
        provider=provider,
    )


def _call(item: ResponseFunctionToolCall, id_factory: Callable[[], str]) -> ToolCallPart:
    return tool_call_part(item.call_id or item.id or id_factory(), item.name, item.arguments)


def thinking_block(item: ResponseReasoningItem, *, provider: str, model: str | None) -> ThinkingPart | None:
    """A reasoning item as thinking: its summary parts (or reasoning text) and its opaque state; ``None`` when it
    holds neither."""
    text = "\n\n".join(summary.text for summary in item.summary if summary.text)
    if not text and item.content:
        text = "".join(content.text for content in item.content)
    state = reasoning_state(item, provider=provider, model=model)
    if not text and state is None:
        return None
    return ThinkingPart(text=text, opaque=state)


def output_parts(
    output: Sequence[ResponseOutputItem], id_factory: Callable[[], str], *, provider: str, model: str | None
) -> list[ContentPart]:
    """The content parts of a response's output items, in order (reasoning, text, refusals, function calls)."""
    parts: list[ContentPart] = []
    for item in output:
        match item.type:
            case "reasoning":
                if (thinking := thinking_block(item, provider=provider, model=model)) is not None:
                    parts.append(thinking)
            case "message":
                text = "".join(c.text if c.type == "output_text" else c.refusal for c in item.content)
                if text:
                    parts.append(TextPart(text=text))
            case "function_call":
                parts.append(_call(item, id_factory))
    return parts


def to_chat_response(response: Response, id_factory: Callable[[], str], *, provider: str) -> ChatResponse:
    """Map a whole (non-streamed) response onto a ``ChatResponse``.

    Raises:
        ProviderError: The response failed.
    """
    if response.status == "failed":
        error = response.error
        raise failure(error.code if error else None, error.message if error else "", provider=provider)
    parts = output_parts(response.output, id_factory, provider=provider, model=response.model or None)
    has_calls = any(isinstance(part, ToolCallPart) for part in parts)
    return ChatResponse(
        message=ChatMessage(role=Role.ASSISTANT, parts=tuple(parts)),
        usage=to_usage(response.usage) if response.usage is not None else None,
        finish_reason=finish_reason(response, has_tool_calls=has_calls),
    )


@dataclass(slots=True)
class ResponsesStreamAccumulator:
    """Turns Responses stream events into ``ChatUpdate``s: text and reasoning-summary deltas as they come, each
    function call once its item is done, each reasoning item closed as a thinking block with its encrypted state,
    usage and finish reason at the end.

    Args:
        id_factory: Makes an id for a function call that arrives without one.
        provider: The provider's name, for errors.
    """

    id_factory: Callable[[], str]
    provider: str
    _model: str | None = None
    _calls: int = 0
    _summaries: set[tuple[str, int]] = field(default_factory=set)

    def feed(self, event: ResponseStreamEvent) -> list[ChatUpdate]:
        """Read one event and return the updates it completes.

        Raises:
            ProviderError: The event reports a failure (``error`` or ``response.failed``).
        """
        match event.type:
            case "response.output_text.delta" | "response.refusal.delta":
                return [ChatUpdate(text_delta=event.delta)] if event.delta else []
            case "response.reasoning_summary_text.delta":
                separator = self._separator(event.item_id, event.summary_index)
                return [ChatUpdate(thinking_delta=separator + event.delta)] if event.delta else []
            case "response.reasoning_text.delta":
                return [ChatUpdate(thinking_delta=event.delta)] if event.delta else []
            case "response.output_item.done":
                return self._item_done(event.item)
            case "response.created":
                self._model = event.response.model or None
            case "response.completed" | "response.incomplete":
                usage = event.response.usage
                reason = finish_reason(event.response, has_tool_calls=self._calls > 0)
                return [ChatUpdate(usage=to_usage(usage) if usage else None, finish_reason=reason)]
            case "response.failed":
                error = event.response.error
                raise failure(error.code if error else None, error.message if error else "", provider=self.provider)
            case "error":
                raise failure(event.code, event.message, provider=self.provider)
        return []

    def _separator(self, item_id: str, summary_index: int) -> str:
        """A blank line between summary parts, the way the non-streamed mapping joins them."""
        first = not any(seen[0] == item_id for seen in self._summaries)
        key = (item_id, summary_index)
        if key in self._summaries:
            return ""
        self._summaries.add(key)
        return "" if first else "\n\n"

    def _item_done(self, item: ResponseOutputItem) -> list[ChatUpdate]:
        if item.type == "function_call":
            self._calls += 1
            return [ChatUpdate(tool_calls=(_call(item, self.id_factory),))]
        if item.type == "reasoning":
            block = thinking_block(item, provider=self.provider, model=self._model)
            return [ChatUpdate(thinking_block=block)] if block is not None else []
        return []


Api = Literal["responses", "chat"]
"""The wire API an OpenAI provider speaks."""


__all__ = [
    "Api",
    "ResponsesRequest",
    "ResponsesStreamAccumulator",
    "build_responses_request",
    "failure",
    "finish_reason",
    "is_reasoning_model",
    "output_parts",
    "reasoning_state",
    "thinking_block",
    "to_chat_response",
    "to_function_tool",
    "to_input_items",
    "to_tool_choice",
    "to_usage",
]
