"""Pure mapping of ironhive conversations and options onto Anthropic Messages API requests."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Required, TypeAlias, TypedDict

from anthropic.types import (
    AssistantMessageParam,
    MessageParam,
    OutputConfigParam,
    RedactedThinkingBlockParam,
    TextBlockParam,
    ThinkingBlockParam,
    ThinkingConfigParam,
    ToolChoiceParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
    UserMessageParam,
)

from ironhive.adapters.anthropic.reasoning import SignedThinking, block_of
from ironhive.domain.tool_mode import ToolMode, parse_tool_mode
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    JsonValue,
    ReasoningEffort,
    Role,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)

_Block: TypeAlias = (
    TextBlockParam | ThinkingBlockParam | RedactedThinkingBlockParam | ToolUseBlockParam | ToolResultBlockParam
)
_Turn: TypeAlias = tuple[Literal["user", "assistant"], list[_Block]]
AdaptiveEffort: TypeAlias = Literal["low", "medium", "high", "xhigh"]

THINKING_BUDGETS: Mapping[ReasoningEffort, int] = {"low": 1024, "medium": 4096, "high": 16384, "extra_high": 32000}
"""``budget_tokens`` per effort; also the room added to the default ``max_tokens`` when thinking is on."""
ADAPTIVE_EFFORTS: Mapping[ReasoningEffort, AdaptiveEffort] = {
    "low": "low",
    "medium": "medium",
    "high": "high",
    "extra_high": "xhigh",
}
"""``output_config.effort`` per effort, for models that think adaptively."""
MIN_THINKING_BUDGET = 1024
CACHE_MIN_TOKENS = 1024
"""A system message this large (estimated as characters / 4) becomes a prompt-cache breakpoint."""
MAX_CACHE_BREAKPOINTS = 4
"""The API refuses more than four ``cache_control`` blocks in one request."""

_GENERATION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?!\d)")
_ADAPTIVE_ONLY_LINES = re.compile(r"claude-(?:mythos|fable)")


class MessagesRequest(TypedDict, total=False):
    """Keyword arguments for ``messages.create`` (the streaming flag excluded)."""

    model: Required[str]
    max_tokens: Required[int]
    messages: Required[list[MessageParam]]
    system: list[TextBlockParam]
    tools: list[ToolParam]
    tool_choice: ToolChoiceParam
    thinking: ThinkingConfigParam
    output_config: OutputConfigParam
    extra_body: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class ModelTraits:
    """What a Claude model accepts, inferred from its id.

    Attributes:
        adaptive_thinking: Thinks with ``{"type": "adaptive"}`` and ``output_config.effort``; Claude 4.6 deprecates
            ``budget_tokens`` and later models reject it with a 400.
        sampling: Accepts ``temperature``; models after Claude 4.6 reject it as deprecated.
    """

    adaptive_thinking: bool
    sampling: bool


def model_traits(model: str) -> ModelTraits:
    """Infer a model's traits from its id; unknown ids are treated like the older, budget-thinking models."""
    if _ADAPTIVE_ONLY_LINES.search(model):
        return ModelTraits(adaptive_thinking=True, sampling=False)
    match = _GENERATION.search(model)
    if match is None:
        return ModelTraits(adaptive_thinking=False, sampling=True)
    version = (int(match.group(1)), int(match.group(2) or 0))
    return ModelTraits(adaptive_thinking=version >= (4, 6), sampling=version < (4, 7))


def to_anthropic_messages(
    messages: Sequence[ChatMessage], *, thinking: bool = False
) -> tuple[list[TextBlockParam], list[MessageParam]]:
    """Map a conversation onto the ``system`` blocks and the alternating user/assistant ``messages``.

    Every system message becomes one system text block (wherever it stood); large ones are cache breakpoints. Tool
    results become ``tool_result`` blocks of a user turn, ahead of any text as the API requires. Consecutive turns of
    one role are merged. Only thinking parts carrying Anthropic's own signature (or redacted data) go back, in
    front of their assistant turn's text and calls: the API accepts no other thinking, and another provider's state is
    never forwarded.

    Args:
        messages: The conversation, oldest first.
        thinking: Send the signed thinking blocks (thinking is on); ``False`` sends no thinking at all.

    Returns:
        ``(system, messages)`` in the API's shape.
    """
    system, turns = _map(messages, thinking)
    return system, [_message_param(role, blocks) for role, blocks in turns]


def _map(messages: Sequence[ChatMessage], thinking: bool) -> tuple[list[TextBlockParam], list[_Turn]]:
    system: list[TextBlockParam] = []
    turns: list[_Turn] = []
    for message in messages:
        if message.role is Role.SYSTEM:
            if message.text.strip():
                system.append({"type": "text", "text": message.text})
            continue
        _append(turns, "user", [_tool_result(result) for result in message.tool_results])
        if message.role is Role.ASSISTANT:
            _append(turns, "assistant", _assistant_blocks(message, thinking))
        elif message.role is Role.USER and message.text.strip():
            _append(turns, "user", [{"type": "text", "text": message.text}])
    mark_cache_breakpoints(system)
    return system, turns


def _append(turns: list[_Turn], role: Literal["user", "assistant"], blocks: list[_Block]) -> None:
    if not blocks:
        return
    if not turns or turns[-1][0] != role:
        turns.append((role, blocks))
        return
    merged = turns[-1][1] + blocks
    if role == "user":
        # tool_result blocks must open a user turn; a stable sort keeps each group's own order.
        merged.sort(key=lambda block: block["type"] != "tool_result")
    turns[-1] = (role, merged)


def _message_param(role: Literal["user", "assistant"], blocks: list[_Block]) -> MessageParam:
    if role == "user":
        user: UserMessageParam = {"role": "user", "content": blocks}
        return user
    assistant: AssistantMessageParam = {"role": "assistant", "content": blocks}
    return assistant


def _tool_result(result: ToolResultPart) -> ToolResultBlockParam:
    block: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": result.call_id, "content": result.result}
    if result.success is False:
        block["is_error"] = True
    return block


def _assistant_blocks(message: ChatMessage, thinking: bool) -> list[_Block]:
    calls = message.tool_calls
    blocks: list[_Block] = []
    if thinking:
        parts = (part for part in message.parts if isinstance(part, ThinkingPart))
        blocks.extend(block for part in parts if (block := block_of(part)) is not None)
    if message.text.strip():
        blocks.append({"type": "text", "text": message.text})
    blocks.extend(_tool_use(call) for call in calls)
    return blocks


def _tool_use(call: ToolCallPart) -> ToolUseBlockParam:
    arguments: dict[str, object] = dict(call.arguments) if call.arguments is not None else {}  # unparseable: empty
    return {"type": "tool_use", "id": call.call_id, "name": call.name, "input": arguments}


def mark_cache_breakpoints(system: list[TextBlockParam]) -> None:
    """Make each large system block an ephemeral prompt-cache breakpoint, at most ``MAX_CACHE_BREAKPOINTS``.

    The earliest large blocks win: a cache entry covers everything before its breakpoint (tools included), so the
    leading, stable instructions are the ones worth caching.
    """
    marked = 0
    for block in system:
        if marked < MAX_CACHE_BREAKPOINTS and len(block["text"]) / 4 >= CACHE_MIN_TOKENS:
            block["cache_control"] = {"type": "ephemeral"}
            marked += 1


def to_anthropic_tool(spec: ToolSpec) -> ToolParam:
    """Map a tool's spec onto a (client) tool definition; a schema without a type is an object schema."""
    schema: dict[str, object] = {"type": "object", **spec.parameters}
    tool: ToolParam = {"name": spec.name, "input_schema": schema}
    if spec.description:
        tool["description"] = spec.description
    return tool


def to_tool_choice(tool_mode: str) -> ToolChoiceParam:
    """Map a tool mode (see :func:`~ironhive.domain.tool_mode.parse_tool_mode`) onto ``tool_choice``.

    Raises:
        ConfigurationError: The mode is not one of the known forms.
    """
    match parse_tool_mode(tool_mode):
        case ToolMode(kind="tool", tool=str(name)):
            return {"type": "tool", "name": name}
        case ToolMode(kind="any"):
            return {"type": "any"}
        case ToolMode(kind="none"):
            return {"type": "none"}
    return {"type": "auto"}


def build_request(
    messages: Sequence[ChatMessage],
    options: ChatOptions,
    *,
    default_model: str,
    default_max_tokens: int,
) -> MessagesRequest:
    """Build the keyword arguments of one ``messages.create`` call.

    Thinking follows ``options.reasoning_effort``: a ``budget_tokens`` from ``THINKING_BUDGETS`` (older models) or
    adaptive thinking with ``output_config.effort`` (``model_traits``); ``none`` turns it off. When thinking is on and
    ``max_output_tokens`` is unset, ``max_tokens`` is the default plus the budget, because thinking tokens count
    against it; a set limit is kept and the budget shrunk below it. The API refuses thinking with a forced tool
    choice, and in a tool round whose assistant turn cannot start with its signed thinking (a session's thinking
    parts carry Anthropic's signatures, so a resumed session keeps it on); thinking is left off
    then. ``temperature`` goes out only while thinking is off (the API accepts nothing but 1 with thinking) and only
    to models that still take it; the SDK no longer types it, so it travels in ``extra_body``.

    Args:
        messages: The conversation, oldest first.
        options: Settings of this call; ``options.model`` overrides ``default_model``.
        default_model: The client's model.
        default_max_tokens: ``max_tokens`` when ``options.max_output_tokens`` is unset (the API requires one).

    Returns:
        The request, ready to unpack into ``messages.create``.

    Raises:
        ConfigurationError: The tool mode is unknown.
    """
    model = options.model or default_model
    traits = model_traits(model)
    effort = None if options.reasoning_effort == "none" else options.reasoning_effort
    tools = [to_anthropic_tool(spec) for spec in options.tools or ()]
    choice = to_tool_choice(options.tool_mode) if options.tool_mode is not None else None
    forced = bool(tools) and choice is not None and choice["type"] in ("any", "tool")
    budget = _thinking_budget(effort, options.max_output_tokens) if effort is not None else None
    thinking = effort is not None and not forced and (traits.adaptive_thinking or budget is not None)
    system, turns = _map(messages, thinking)
    if thinking and not _final_assistant_starts_with_thinking(turns):
        thinking = False
        system, turns = _map(messages, False)
    max_tokens = options.max_output_tokens or default_max_tokens
    if thinking and effort is not None and options.max_output_tokens is None:
        max_tokens += THINKING_BUDGETS[effort]
    mapped = [_message_param(role, blocks) for role, blocks in turns]
    request: MessagesRequest = {"model": model, "max_tokens": max_tokens, "messages": mapped}
    if system:
        request["system"] = system
    if tools:
        request["tools"] = tools
        if choice is not None:  # the API rejects tool_choice without tools
            request["tool_choice"] = choice
    if traits.adaptive_thinking:
        if thinking:
            request["thinking"] = {"type": "adaptive", "display": "summarized"}  # newer models omit it by default
        if effort is not None:
            request["output_config"] = {"effort": ADAPTIVE_EFFORTS[effort]}  # effort applies with or without thinking
    elif thinking and budget is not None:
        request["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif options.reasoning_effort == "none":
        request["thinking"] = {"type": "disabled"}
    if options.temperature is not None and not thinking and traits.sampling:
        request["extra_body"] = {"temperature": options.temperature}
    return request


def _thinking_budget(effort: ReasoningEffort, max_output_tokens: int | None) -> int | None:
    budget = THINKING_BUDGETS[effort]
    if max_output_tokens is not None:
        budget = min(budget, max_output_tokens - 1)  # the API wants budget_tokens < max_tokens
    return budget if budget >= MIN_THINKING_BUDGET else None


def _final_assistant_starts_with_thinking(turns: Sequence[_Turn]) -> bool:
    """Whether the request meets "a final assistant turn with tool_use must start with a thinking block"."""
    for role, blocks in reversed(turns):
        if role != "assistant":
            continue
        if not any(block["type"] == "tool_use" for block in blocks):
            return True
        return blocks[0]["type"] in ("thinking", "redacted_thinking")
    return True


__all__ = [
    "ADAPTIVE_EFFORTS",
    "CACHE_MIN_TOKENS",
    "MAX_CACHE_BREAKPOINTS",
    "MIN_THINKING_BUDGET",
    "THINKING_BUDGETS",
    "MessagesRequest",
    "ModelTraits",
    "SignedThinking",
    "build_request",
    "mark_cache_breakpoints",
    "model_traits",
    "to_anthropic_messages",
    "to_anthropic_tool",
    "to_tool_choice",
]
