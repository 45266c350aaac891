"""Chat data types (messages, content parts, usage, options, updates) and the ChatClient port."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, Protocol, TypeAlias, runtime_checkable

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
"""A JSON value as the standard library's json module reads and writes it."""


class Role(StrEnum):
    """Who wrote a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@dataclass(frozen=True, kw_only=True, slots=True)
class TextPart:
    """Plain text written by a user or the model."""

    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, kw_only=True, slots=True)
class OpaqueState:
    """Reasoning state a provider issued with a part, to be sent back only to that provider.

    Anthropic signs thinking blocks (or returns them redacted, encrypted), Gemini attaches thought signatures to parts
    and function calls, OpenAI's Responses API returns encrypted reasoning items. The state is stored with the session
    so a resumed conversation sends it back; a client ignores state another provider made (never forwards it).

    Attributes:
        provider: The canonical name of the provider that issued it (the client's ``provider_name``).
        data: The state in a form the issuing adapter owns (e.g. a signature, base64 or JSON text); opaque to others.
        model: The model that produced it, where the provider binds the state to a model.
    """

    provider: str
    data: str
    model: str | None = None

    def json_object_for(self, provider: str) -> dict[str, object] | None:
        """``data`` read as a JSON object when ``provider`` issued it; ``None`` for another provider's or unreadable
        state (for the adapters that keep their state as JSON)."""
        if self.provider != provider:
            return None
        try:
            state = json.loads(self.data)
        except json.JSONDecodeError:
            return None
        return state if isinstance(state, dict) else None


@dataclass(frozen=True, kw_only=True, slots=True)
class ThinkingPart:
    """Reasoning text the model produced apart from its answer.

    Attributes:
        text: The readable reasoning (or its summary); empty for a block whose reasoning is only encrypted.
        opaque: The provider's state for this block (a signature, redacted thinking, an encrypted reasoning item).
    """

    text: str
    opaque: OpaqueState | None = None
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallPart:
    """A complete tool call requested by the model.

    Attributes:
        call_id: The provider's id for the call; pairs the call with its result.
        name: The tool's name.
        arguments: The parsed arguments, or ``None`` when ``arguments_text`` could not be parsed.
        arguments_text: The arguments exactly as the model sent them (JSON text).
        parse_error: Why ``arguments_text`` could not be parsed ("<ErrorType>: <message>"), when it could not.
            Build calls with ``ironhive.domain.tool_calls.make_tool_call`` so every adapter parses alike.
        opaque: The provider's state for this call (e.g. Gemini's thought signature and wire id).
    """

    call_id: str
    name: str
    arguments: Mapping[str, JsonValue] | None
    arguments_text: str = "{}"
    parse_error: str | None = None
    opaque: OpaqueState | None = None
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultPart:
    """The outcome of one tool call, sent back to the model.

    Attributes:
        call_id: The id of the call this answers.
        name: The tool's name.
        result: The text the model reads.
        success: True or False once known; ``None`` when the outcome is unknown.
    """

    call_id: str
    name: str
    result: str
    success: bool | None
    kind: Literal["tool_result"] = "tool_result"


ContentPart: TypeAlias = TextPart | ThinkingPart | ToolCallPart | ToolResultPart


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatMessage:
    """One message of a conversation."""

    role: Role
    parts: tuple[ContentPart, ...] = ()

    @classmethod
    def of_text(cls, role: Role, text: str) -> ChatMessage:
        """Build a message holding a single text part."""
        return cls(role=role, parts=(TextPart(text=text),))

    @property
    def text(self) -> str:
        """The message's text parts joined together."""
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The tool calls this message requests."""
        return tuple(part for part in self.parts if isinstance(part, ToolCallPart))

    @property
    def tool_results(self) -> tuple[ToolResultPart, ...]:
        """The tool results this message carries."""
        return tuple(part for part in self.parts if isinstance(part, ToolResultPart))


@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """Token counts a provider reported; ``None`` where it reported nothing.

    The same meaning for every provider: ``input_tokens`` counts all prompt tokens (including those read from or
    written to a prompt cache) and ``output_tokens`` all generated tokens (including reasoning). The two detail counts
    are parts of those totals, never added to them: ``cached_input_tokens`` of the input was read from the provider's
    prompt cache, ``reasoning_tokens`` of the output was spent on reasoning.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        """Input plus output; ``None`` only when both are unknown."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=_add_optional(self.input_tokens, other.input_tokens),
            output_tokens=_add_optional(self.output_tokens, other.output_tokens),
            cached_input_tokens=_add_optional(self.cached_input_tokens, other.cached_input_tokens),
            reasoning_tokens=_add_optional(self.reasoning_tokens, other.reasoning_tokens),
        )


def _add_optional(left: int | None, right: int | None) -> int | None:
    if left is None:
        return right
    if right is None:
        return left
    return left + right


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec:
    """What the model is told about a tool: its name, description and JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, JsonValue]


ReasoningEffort: TypeAlias = Literal["none", "low", "medium", "high", "extra_high"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatOptions:
    """Settings of one model call. ``None`` means "not set": the provider's default applies.

    Attributes:
        tools: The tools offered to the model (``()`` offers none).
        tool_mode: ``auto``, ``none``, ``require_any`` or ``require:<tool>``.
        reasoning_effort: How hard a reasoning model should think.
    """

    model: str | None = None
    temperature: float | None = None
    max_output_tokens: int | None = None
    tools: tuple[ToolSpec, ...] | None = None
    tool_mode: str | None = None
    reasoning_effort: ReasoningEffort | None = None


FinishReason: TypeAlias = Literal["stop", "length", "tool_calls", "content_filter", "repetition"]
"""How a reply ended; ``repetition``: a local model was stopped because it kept repeating itself."""


FallbackKind: TypeAlias = Literal["retry", "fallback", "exhausted"]


@dataclass(frozen=True, kw_only=True, slots=True)
class FallbackNotice:
    """A step of provider failover: a retry, a switch to the next provider, or the chain exhausted.

    Attributes:
        kind: ``retry`` (same provider again), ``fallback`` (the next provider takes over) or ``exhausted``.
        category: Why: ``rate_limit``, ``overloaded``, ``server``, ``network``, ``timeout``, ``auth``, ``bad_request``
            or ``unknown``.
        provider_index: The provider that failed (0-based position in the chain).
        total_providers: The chain's length.
        attempt: The attempt on that provider that failed (1-based).
        max_attempts: Attempts allowed per provider.
        message: What happened, fit to show a user.
    """

    kind: FallbackKind
    category: str
    provider_index: int
    total_providers: int
    attempt: int
    max_attempts: int
    message: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatUpdate:
    """One piece of a streamed response. Tool calls arrive complete, never as fragments.

    ``thinking_block`` closes a reasoning block: the complete part (its text was streamed before as
    ``thinking_delta``, or is empty for encrypted reasoning) with the provider's opaque state, which the stored
    message keeps in place of the text streamed since the previous block closed.
    """

    text_delta: str = ""
    thinking_delta: str = ""
    thinking_block: ThinkingPart | None = None
    tool_calls: tuple[ToolCallPart, ...] = ()
    usage: Usage | None = None
    finish_reason: FinishReason | None = None
    fallback: FallbackNotice | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatResponse:
    """A whole response of one model call, with the failover steps it took to get it."""

    message: ChatMessage
    usage: Usage | None = None
    finish_reason: FinishReason | None = None
    notices: tuple[FallbackNotice, ...] = ()


@runtime_checkable
class ChatClient(Protocol):
    """A language model that answers a conversation, whole or streamed."""

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """Answer ``messages`` in one piece.

        Args:
            messages: The conversation so far, oldest first.
            options: Settings of this call.

        Returns:
            The assistant's message with usage and finish reason.

        Raises:
            ProviderError: The provider failed or refused the request.
        """
        ...

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatUpdate]:
        """Answer ``messages`` as a stream of updates.

        Args:
            messages: The conversation so far, oldest first.
            options: Settings of this call.

        Returns:
            An async iterator of updates; tool calls arrive complete.

        Raises:
            ProviderError: The provider failed or refused the request.
        """
        ...


@runtime_checkable
class Preloadable(Protocol):
    """A chat client with slow start-up work (loading a local model) that can be done ahead of the first call."""

    async def warm_up(self) -> None:
        """Do the start-up work now (off the event loop), so the first call answers promptly."""
        ...


@runtime_checkable
class ContextSizeProvider(Protocol):
    """A chat client that knows the size of its model's context window."""

    @property
    def context_size(self) -> int:
        """The model's context window in tokens."""
        ...


__all__ = [
    "ChatClient",
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "ChatUpdate",
    "ContentPart",
    "ContextSizeProvider",
    "FallbackKind",
    "FallbackNotice",
    "FinishReason",
    "JsonValue",
    "Preloadable",
    "ReasoningEffort",
    "Role",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolResultPart",
    "ToolSpec",
    "Usage",
]
