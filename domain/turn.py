"""What one turn of the agent loop produces: the chunks of its stream and the final turn record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ironhive.ports.chat import ChatMessage, FallbackNotice, FinishReason, ToolCallPart, Usage

_CUT_SHORT: dict[str, str] = {
    "length": "the answer reached the output token limit",
    "repetition": "the answer was stopped because it kept repeating itself",
    "content_filter": "the provider's content filter stopped the answer",
}


def cut_short(finish_reason: FinishReason | None) -> str | None:
    """Why an answer ended before the model finished it, in words, or ``None`` when it ended normally.

    Every surface shows this, so a truncated or looping answer is never mistaken for a complete one.
    """
    return None if finish_reason is None else _CUT_SHORT.get(finish_reason)


def cut_reason(finish_reason: FinishReason | None) -> FinishReason | None:
    """The finish reason when it cut the answer short (what the json outputs and the wire carry), else ``None``."""
    return finish_reason if cut_short(finish_reason) is not None else None


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallRecord:
    """One tool call of a turn and its outcome.

    Attributes:
        success: True or False once known; ``None`` when the outcome is unknown.
    """

    call_id: str
    name: str
    arguments_text: str
    result: str
    success: bool | None


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnRecord:
    """Everything one turn produced.

    Attributes:
        content: The assistant's text over all rounds of the turn, rounds separated by a blank line.
        thinking: The reasoning text the model produced apart from its answer.
        tool_calls: Every tool call of the turn with its outcome, in call order.
        usage: Token counts summed over every model round-trip of the turn.
        finish_reason: Why the last model call stopped.
        messages: The messages this turn added to the history (user, assistant, tool).
        addendum: The turn observers' note; shown to the user, never stored in the history.
        duration_ms: Wall time of the turn.
    """

    content: str
    thinking: str = ""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: FinishReason | None = None
    messages: tuple[ChatMessage, ...] = ()
    addendum: str | None = None
    duration_ms: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta:
    """A piece of the assistant's answer."""

    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, kw_only=True, slots=True)
class ThinkingDelta:
    """A piece of the model's reasoning, kept apart from the answer."""

    text: str
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallChunk:
    """A complete tool call the model requested, before it runs."""

    call: ToolCallPart
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultChunk:
    """A tool call that finished (or was refused)."""

    record: ToolCallRecord
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, kw_only=True, slots=True)
class UsageChunk:
    """Token counts of one model round-trip."""

    usage: Usage
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True, kw_only=True, slots=True)
class AddendumChunk:
    """A turn observer's note, after the last text of the turn."""

    text: str
    kind: Literal["addendum"] = "addendum"


@dataclass(frozen=True, kw_only=True, slots=True)
class ContextCompactedChunk:
    """The request of a model call was compacted to fit the context window (the stored history is untouched).

    Attributes:
        tokens_before: Estimated tokens of the request before compaction.
        tokens_after: Estimated tokens of the request sent.
        messages_summarized: Messages a summary stands for.
        messages_dropped: Messages left out of the request.
        summary_used: Whether the model wrote a summary of the pruned messages.
        parts_cut: Texts (the user's message included), tool results and call arguments shortened in the request.
        chars_cut: Characters those cuts removed, net of the markers left in their place.
    """

    tokens_before: int
    tokens_after: int
    messages_summarized: int
    messages_dropped: int
    summary_used: bool
    parts_cut: int = 0
    chars_cut: int = 0
    kind: Literal["context_compacted"] = "context_compacted"


@dataclass(frozen=True, kw_only=True, slots=True)
class FallbackChunk:
    """A provider failover step (retry, switch to the next provider, chain exhausted)."""

    notice: FallbackNotice
    kind: Literal["fallback"] = "fallback"


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnCompleted:
    """The last chunk of every successful turn."""

    turn: TurnRecord
    kind: Literal["turn"] = "turn"


AgentChunk: TypeAlias = (
    TextDelta
    | ThinkingDelta
    | ToolCallChunk
    | ToolResultChunk
    | UsageChunk
    | AddendumChunk
    | FallbackChunk
    | ContextCompactedChunk
    | TurnCompleted
)
