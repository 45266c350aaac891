"""Pure mapping between ironhive chat types and OpenAI chat-completions requests, chunks and responses."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Required, TypeAlias, TypedDict, cast

from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
    ChatCompletionToolChoiceOptionParam,
    ChatCompletionToolMessageParam,
)
from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall
from openai.types.completion_usage import CompletionUsage

from ironhive.domain.tool_mode import ToolMode, parse_tool_mode
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatUpdate,
    ContentPart,
    FinishReason,
    JsonValue,
    ReasoningEffort,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)

SdkReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
"""The reasoning efforts the openai SDK 3.x accepts (``openai.types.shared.ReasoningEffort``)."""

REASONING_EFFORTS: Mapping[ReasoningEffort, SdkReasoningEffort] = {
    "none": "none",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "extra_high": "xhigh",
}

_FINISH_REASONS: Mapping[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}

# llama.cpp, vLLM and DeepSeek put reasoning text in one of these non-standard fields.
_REASONING_FIELDS = ("reasoning_content", "reasoning")


class CompletionRequest(TypedDict, total=False):
    """Keyword arguments for ``chat.completions.create`` (streaming flags excluded)."""

    model: Required[str]
    messages: Required[list[ChatCompletionMessageParam]]
    temperature: float
    max_completion_tokens: int
    max_tokens: int
    tools: list[ChatCompletionFunctionToolParam]
    tool_choice: ChatCompletionToolChoiceOptionParam
    reasoning_effort: SdkReasoningEffort


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[ChatCompletionMessageParam]:
    """Map a conversation onto chat-completions messages.

    Tool results become one ``role: tool`` message each, placed before any text of the same message because the API
    wants them right after the assistant message that made the calls. Thinking is never sent back.

    Args:
        messages: The conversation, oldest first.

    Returns:
        The messages in the API's shape.
    """
    mapped: list[ChatCompletionMessageParam] = []
    for message in messages:
        mapped.extend(_tool_message(result) for result in message.tool_results)
        match message.role:
            case Role.SYSTEM:
                mapped.append({"role": "system", "content": message.text})
            case Role.USER:
                if message.text or not message.tool_results:
                    mapped.append({"role": "user", "content": message.text})
            case Role.ASSISTANT:
                mapped.append(_assistant_message(message))
            case Role.TOOL:
                pass  # only its results are meaningful, and they are already mapped
    return mapped


def _tool_message(result: ToolResultPart) -> ChatCompletionToolMessageParam:
    return {"role": "tool", "tool_call_id": result.call_id, "content": result.result}


def _assistant_message(message: ChatMessage) -> ChatCompletionAssistantMessageParam:
    calls = message.tool_calls
    mapped: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": message.text or None}
    if calls:
        mapped["tool_calls"] = [_tool_call_param(call) for call in calls]
    elif mapped["content"] is None:
        mapped["content"] = ""
    return mapped


def _tool_call_param(call: ToolCallPart) -> ChatCompletionMessageFunctionToolCallParam:
    # Servers such as llama.cpp parse historic arguments as JSON, so blank text goes back as an empty object.
    arguments = call.arguments_text if call.arguments_text.strip() else "{}"
    return {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


def to_openai_tool(spec: ToolSpec) -> ChatCompletionFunctionToolParam:
    """Map a tool's spec onto a function tool."""
    return {
        "type": "function",
        "function": {"name": spec.name, "description": spec.description, "parameters": dict(spec.parameters)},
    }


def to_tool_choice(tool_mode: str) -> ChatCompletionToolChoiceOptionParam:
    """Map a tool mode (see :func:`~ironhive.domain.tool_mode.parse_tool_mode`) onto ``tool_choice``.

    Raises:
        ConfigurationError: The mode is not one of the known forms.
    """
    match parse_tool_mode(tool_mode):
        case ToolMode(kind="tool", tool=str(name)):
            return {"type": "function", "function": {"name": name}}
        case ToolMode(kind="any"):
            return "required"
        case ToolMode(kind="none"):
            return "none"
    return "auto"


def build_request(
    messages: Sequence[ChatMessage], options: ChatOptions, *, default_model: str, use_max_tokens_field: bool = False
) -> CompletionRequest:
    """Build the keyword arguments of one chat-completions call; unset options are left out.

    Args:
        messages: The conversation, oldest first.
        options: Settings of this call; ``options.model`` overrides ``default_model``.
        default_model: The client's model.
        use_max_tokens_field: Send the limit as the legacy ``max_tokens`` (some compatible servers know only that)
            instead of ``max_completion_tokens``.

    Returns:
        The request, ready to unpack into ``chat.completions.create``.

    Raises:
        ConfigurationError: The tool mode is unknown.
    """
    request: CompletionRequest = {"model": options.model or default_model, "messages": to_openai_messages(messages)}
    if options.temperature is not None:
        request["temperature"] = options.temperature
    if options.max_output_tokens is not None:
        if use_max_tokens_field:
            request["max_tokens"] = options.max_output_tokens
        else:
            request["max_completion_tokens"] = options.max_output_tokens
    if options.tools:
        request["tools"] = [to_openai_tool(spec) for spec in options.tools]
    if options.tool_mode is not None:
        choice = to_tool_choice(options.tool_mode)
        # The API rejects tool_choice without tools; with no tools offered every mode means the same thing.
        if options.tools:
            request["tool_choice"] = choice
    if options.reasoning_effort is not None:
        request["reasoning_effort"] = REASONING_EFFORTS[options.reasoning_effort]
    return request


def parse_arguments(text: str) -> tuple[Mapping[str, JsonValue] | None, str | None]:
    """Parse a tool call's arguments text.

    Returns:
        ``(arguments, None)`` when the text is a JSON object (blank text counts as ``{}``), else ``(None, reason)``.
    """
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, not {type(value).__name__}"
    return cast(dict[str, JsonValue], value), None


def tool_call_part(call_id: str, name: str, arguments_text: str) -> ToolCallPart:
    """Build a complete tool call, parsing its arguments."""
    arguments, error = parse_arguments(arguments_text)
    return ToolCallPart(
        call_id=call_id, name=name, arguments=arguments, arguments_text=arguments_text, parse_error=error
    )


def to_usage(usage: CompletionUsage) -> Usage:
    """Map the API's token counts (cached prompt and reasoning tokens are within the totals) onto ``Usage``."""
    prompt_details = usage.prompt_tokens_details
    completion_details = usage.completion_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        cached_input_tokens=None if prompt_details is None else prompt_details.cached_tokens,
        reasoning_tokens=None if completion_details is None else completion_details.reasoning_tokens,
    )


def to_finish_reason(raw: str | None, *, has_tool_calls: bool = False) -> FinishReason | None:
    """Map the API's finish reason; a choice that made tool calls finished for ``tool_calls`` whatever it says."""
    if raw is None:
        return None
    if has_tool_calls:
        return "tool_calls"
    return _FINISH_REASONS.get(raw, "stop")


def _reasoning_text(source: object) -> str:
    for name in _REASONING_FIELDS:
        value = getattr(source, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


@dataclass(slots=True)
class _PendingCall:
    call_id: str = ""
    name: str = ""
    fragments: list[str] = field(default_factory=list)


class StreamAccumulator:
    """Turns ``ChatCompletionChunk``s into ``ChatUpdate``s, holding tool calls back until they are complete.

    Only choice 0 is read: ironhive never asks for more than one.

    Args:
        id_factory: Makes an id for a tool call that arrives without one.
    """

    def __init__(self, id_factory: Callable[[], str]) -> None:
        self._id_factory = id_factory
        self._calls: dict[int, _PendingCall] = {}

    def feed(self, chunk: ChatCompletionChunk) -> list[ChatUpdate]:
        """Read one chunk and return the updates it completes (often one, sometimes none)."""
        updates: list[ChatUpdate] = []
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            updates.extend(self._read_delta(choice.delta))
            if choice.finish_reason is not None:
                calls = self._take_calls()
                reason = to_finish_reason(choice.finish_reason, has_tool_calls=bool(calls))
                updates.append(ChatUpdate(tool_calls=calls, finish_reason=reason))
        if chunk.usage is not None:
            updates.append(ChatUpdate(usage=to_usage(chunk.usage)))
        return updates

    def finish(self) -> list[ChatUpdate]:
        """Flush tool calls of a stream that ended without a finish reason."""
        calls = self._take_calls()
        return [ChatUpdate(tool_calls=calls)] if calls else []

    def _read_delta(self, delta: ChoiceDelta) -> list[ChatUpdate]:
        for fragment in delta.tool_calls or ():
            self._add_fragment(fragment)
        text = (delta.content or "") + (delta.refusal or "")
        thinking = _reasoning_text(delta)
        return [ChatUpdate(text_delta=text, thinking_delta=thinking)] if text or thinking else []

    def _add_fragment(self, fragment: ChoiceDeltaToolCall) -> None:
        index = getattr(fragment, "index", None)
        if not isinstance(index, int):
            # A server that omits the index sends each call whole, so every fragment is a new call.
            index = len(self._calls)
        pending = self._calls.setdefault(index, _PendingCall())
        if fragment.id and not pending.call_id:
            pending.call_id = fragment.id
        function = fragment.function
        if function is not None:
            if function.name and not pending.name:
                pending.name = function.name
            if function.arguments:
                pending.fragments.append(function.arguments)

    def _take_calls(self) -> tuple[ToolCallPart, ...]:
        calls = tuple(
            tool_call_part(pending.call_id or self._id_factory(), pending.name, "".join(pending.fragments))
            for _, pending in sorted(self._calls.items())
        )
        self._calls.clear()
        return calls


def to_chat_response(completion: ChatCompletion, id_factory: Callable[[], str]) -> ChatResponse:
    """Map a whole (non-streamed) completion onto a ``ChatResponse``.

    Args:
        completion: The API's answer.
        id_factory: Makes an id for a tool call that arrives without one.
    """
    usage = to_usage(completion.usage) if completion.usage is not None else None
    if not completion.choices:
        return ChatResponse(message=ChatMessage(role=Role.ASSISTANT), usage=usage)
    choice = completion.choices[0]
    message = choice.message
    parts: list[ContentPart] = []
    if thinking := _reasoning_text(message):
        parts.append(ThinkingPart(text=thinking))
    if text := (message.content or "") + (message.refusal or ""):
        parts.append(TextPart(text=text))
    for call in message.tool_calls or ():
        if call.type == "function":
            parts.append(tool_call_part(call.id or id_factory(), call.function.name, call.function.arguments))
        else:
            parts.append(
                ToolCallPart(
                    call_id=call.id or id_factory(),
                    name=call.custom.name,
                    arguments=None,
                    arguments_text=call.custom.input,
                    parse_error="custom (free-text) tool calls are not supported",
                )
            )
    has_calls = any(isinstance(part, ToolCallPart) for part in parts)
    return ChatResponse(
        message=ChatMessage(role=Role.ASSISTANT, parts=tuple(parts)),
        usage=usage,
        finish_reason=to_finish_reason(choice.finish_reason, has_tool_calls=has_calls),
    )


__all__ = [
    "REASONING_EFFORTS",
    "CompletionRequest",
    "SdkReasoningEffort",
    "StreamAccumulator",
    "build_request",
    "parse_arguments",
    "to_chat_response",
    "to_finish_reason",
    "to_openai_messages",
    "to_openai_tool",
    "to_tool_choice",
    "to_usage",
    "tool_call_part",
]
