"""Pure mapping between ironhive chat types and Gemini (google-genai) contents, configs and responses."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from google.genai import types

from ironhive.adapters.google.reasoning import (
    WireCall,
    call_state,
    text_signature_of,
    text_signature_part,
    wire_call_of,
)
from ironhive.adapters.google.schema import to_gemini_schema
from ironhive.domain.tool_calls import make_tool_call
from ironhive.domain.tool_mode import parse_tool_mode
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatUpdate,
    ContentPart,
    FinishReason,
    ReasoningEffort,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)

# The value Google documents for function calls whose real thought signature is unknown (another model or provider
# made them, or a session stored before parts kept it): Gemini 3 rejects a model turn whose first function call
# carries no signature at all.
DUMMY_THOUGHT_SIGNATURE = b"skip_thought_signature_validator"

THINKING_BUDGETS: Mapping[ReasoningEffort, int] = {
    "none": 0,
    "low": 1024,
    "medium": 8192,
    "high": 16384,
    "extra_high": 24576,  # the largest budget every Gemini 2.5 model accepts
}
"""Thinking budgets (tokens) for models that know only ``thinking_budget`` (Gemini 2.x)."""

THINKING_LEVELS: Mapping[ReasoningEffort, types.ThinkingLevel] = {
    "none": types.ThinkingLevel.MINIMAL,  # Gemini 3 cannot switch thinking off; minimal is the least it does
    "low": types.ThinkingLevel.LOW,
    "medium": types.ThinkingLevel.MEDIUM,
    "high": types.ThinkingLevel.HIGH,
    "extra_high": types.ThinkingLevel.XHIGH,
}
"""Thinking levels for Gemini 3 and later, which prefer ``thinking_level`` to a budget."""

_FINISH_REASONS: Mapping[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
}
_GEMINI_MAJOR = re.compile(r"gemini-(\d+)")


@dataclass(frozen=True, kw_only=True, slots=True)
class GeminiRequest:
    """Keyword arguments for ``models.generate_content`` and ``generate_content_stream``."""

    model: str
    contents: list[types.Content]
    config: types.GenerateContentConfig


def to_gemini_contents(messages: Sequence[ChatMessage], model: str = "") -> tuple[str | None, list[types.Content]]:
    """Map a conversation onto Gemini's system instruction and contents.

    System messages become the system instruction; user text and tool results become ``user`` contents, assistant
    text and tool calls ``model`` contents. Consecutive messages of one role are merged, as Gemini wants the roles to
    alternate. Thought summaries are not sent back (Gemini reads nothing from them); a thought signature the model put
    on its answer goes back on the answer's last text part.

    Args:
        messages: The conversation, oldest first; Gemini's wire ids and thought signatures travel in its calls' state.
        model: The model the request goes to: only its own thought signatures go back to it.

    Returns:
        The system instruction (``None`` when there is none) and the contents.
    """
    wires = {
        call.call_id: wire
        for message in messages
        if message.role is Role.ASSISTANT
        for call in message.tool_calls
        if (wire := wire_call_of(call, model)) is not None
    }
    system: list[str] = []
    turns: list[tuple[str, list[ContentPart]]] = []
    for message in messages:
        role, items = _turn_items(message)
        if role is None:
            system.extend(part.text for part in items if isinstance(part, TextPart))
        elif not items:
            continue  # Gemini rejects a content without parts
        elif turns and turns[-1][0] == role:
            turns[-1][1].extend(items)
        else:
            turns.append((role, items))
    contents: list[types.Content] = []
    calls: list[ToolCallPart] = []
    for role, items in turns:
        if role == "model":
            calls = [item for item in items if isinstance(item, ToolCallPart)]
            contents.append(types.Content(role="model", parts=_model_parts(items, wires, model)))
        else:
            contents.append(types.Content(role="user", parts=_user_parts(items, calls, wires)))
            calls = []
    return ("\n\n".join(system) or None), contents


def _turn_items(message: ChatMessage) -> tuple[str | None, list[ContentPart]]:
    match message.role:
        case Role.SYSTEM:
            return None, [TextPart(text=message.text)] if message.text else []
        case Role.ASSISTANT:
            kept: list[ContentPart] = [
                p for p in message.parts if isinstance(p, ToolCallPart) or (isinstance(p, TextPart) and p.text)
            ]
            signed = [p for p in message.parts if isinstance(p, ThinkingPart) and p.opaque is not None]
            last_text = max((i for i, p in enumerate(kept) if isinstance(p, TextPart)), default=None)
            if signed and last_text is not None:
                kept.insert(last_text + 1, signed[-1])  # its signature goes onto the text part before it
            return "model", kept
        case Role.USER:
            text = [TextPart(text=message.text)] if message.text else []
            return "user", [*message.tool_results, *text]
    return "user", list(message.tool_results)  # a tool message means only its results


def _model_parts(items: Sequence[ContentPart], wires: Mapping[str, WireCall], model: str) -> list[types.Part]:
    parts: list[types.Part] = []
    for item in items:
        if isinstance(item, TextPart):
            parts.append(types.Part(text=item.text))
        elif isinstance(item, ThinkingPart):
            if (signature := text_signature_of(item, model)) is not None and parts and parts[-1].text is not None:
                parts[-1].thought_signature = signature
        elif isinstance(item, ToolCallPart):
            wire = wires.get(item.call_id)
            # Unparseable arguments were answered with an error already; Gemini's args must be an object.
            arguments = dict(item.arguments) if item.arguments is not None else {}
            call = types.FunctionCall(id=wire.wire_id if wire else None, name=item.name, args=arguments)
            parts.append(types.Part(function_call=call, thought_signature=wire.signature if wire else None))
    if parts and all(part.function_call is None or part.thought_signature is None for part in parts):
        first_call = next((part for part in parts if part.function_call is not None), None)
        if first_call is not None:
            first_call.thought_signature = DUMMY_THOUGHT_SIGNATURE
    return parts


def _user_parts(
    items: Sequence[ContentPart], calls: Sequence[ToolCallPart], wires: Mapping[str, WireCall]
) -> list[types.Part]:
    results = [item for item in items if isinstance(item, ToolResultPart)]
    parts = [_function_response(result, wires) for result in _ordered_results(results, calls)]
    parts.extend(types.Part(text=item.text) for item in items if isinstance(item, TextPart))
    return parts


def _ordered_results(results: Sequence[ToolResultPart], calls: Sequence[ToolCallPart]) -> list[ToolResultPart]:
    """Order results like the calls they answer, matched by id, else by name: Gemini pairs them by position."""
    slots: dict[int, int] = {}  # result position -> call index
    for position, result in enumerate(results):
        match = next(
            (i for i, call in enumerate(calls) if call.call_id == result.call_id and i not in slots.values()), None
        )
        if match is not None:
            slots[position] = match
    for position, result in enumerate(results):
        if position not in slots:
            free = (i for i, call in enumerate(calls) if call.name == result.name and i not in slots.values())
            slots[position] = next(free, len(calls) + position)
    return [results[position] for position in sorted(range(len(results)), key=lambda p: (slots[p], p))]


def _function_response(result: ToolResultPart, wires: Mapping[str, WireCall]) -> types.Part:
    wire = wires.get(result.call_id)
    payload = {"error": result.result} if result.success is False else {"result": result.result}
    response = types.FunctionResponse(id=wire.wire_id if wire else None, name=result.name, response=payload)
    return types.Part(function_response=response)


def to_function_declaration(spec: ToolSpec) -> types.FunctionDeclaration:
    """Map a tool's spec onto a function declaration, its schema reduced to what Gemini accepts."""
    schema = to_gemini_schema(spec.parameters)
    parameters = types.Schema.model_validate(schema) if schema is not None else None
    return types.FunctionDeclaration(name=spec.name, description=spec.description, parameters=parameters)


def to_function_calling_config(tool_mode: str) -> types.FunctionCallingConfig:
    """Map a tool mode (see :func:`~ironhive.domain.tool_mode.parse_tool_mode`) onto a function-calling config.

    Raises:
        ConfigurationError: The mode is not one of the known forms.
    """
    mode = parse_tool_mode(tool_mode)
    modes = types.FunctionCallingConfigMode
    if mode.kind == "tool" and mode.tool is not None:
        return types.FunctionCallingConfig(mode=modes.ANY, allowed_function_names=[mode.tool])
    return types.FunctionCallingConfig(mode={"auto": modes.AUTO, "none": modes.NONE}.get(mode.kind, modes.ANY))


def uses_thinking_level(model: str) -> bool:
    """Whether ``model`` is Gemini 3 or later, which takes a thinking level rather than a budget.

    Aliases such as ``gemini-flash-latest`` get a budget: every thinking model accepts one, levels only the newest.
    """
    match = _GEMINI_MAJOR.match(model.rsplit("/", 1)[-1].lower())
    return match is not None and int(match.group(1)) >= 3


def to_thinking_config(effort: ReasoningEffort, model: str) -> types.ThinkingConfig:
    """Map a reasoning effort onto a thinking config that streams thought summaries apart from the answer."""
    if uses_thinking_level(model):
        return types.ThinkingConfig(thinking_level=THINKING_LEVELS[effort], include_thoughts=True)
    budget = THINKING_BUDGETS[effort]
    return types.ThinkingConfig(thinking_budget=budget, include_thoughts=budget != 0 or None)


def build_request(messages: Sequence[ChatMessage], options: ChatOptions, *, default_model: str) -> GeminiRequest:
    """Build one generate-content call; unset options are left out.

    The SDK's automatic function calling and automatic continuation are switched off: ironhive runs the tools and
    decides about retries itself.

    Args:
        messages: The conversation, oldest first.
        options: Settings of this call; ``options.model`` overrides ``default_model``.
        default_model: The client's model.

    Raises:
        ConfigurationError: The tool mode is unknown.
    """
    model = options.model or default_model
    system, contents = to_gemini_contents(messages, model)
    config = types.GenerateContentConfig(
        system_instruction=system,
        temperature=options.temperature,
        max_output_tokens=options.max_output_tokens,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        automatic_continuation=False,
    )
    if options.tools:
        config.tools = [types.Tool(function_declarations=[to_function_declaration(spec) for spec in options.tools])]
    if options.tool_mode is not None:
        calling = to_function_calling_config(options.tool_mode)
        # With no tools offered every mode means the same thing, and Gemini wants no tool config then.
        if options.tools:
            config.tool_config = types.ToolConfig(function_calling_config=calling)
    if options.reasoning_effort is not None:
        config.thinking_config = to_thinking_config(options.reasoning_effort, model)
    return GeminiRequest(model=model, contents=contents, config=config)


def to_usage(usage: types.GenerateContentResponseUsageMetadata) -> Usage | None:
    """Map Gemini's token counts onto ``Usage``; ``None`` when nothing was counted.

    Gemini's ``candidates_token_count`` excludes thoughts, so output adds ``thoughts_token_count`` (reported again as
    the reasoning part); ``prompt_token_count`` includes cached content (reported again as the cached part).
    """
    output: int | None = None
    if usage.candidates_token_count is not None or usage.thoughts_token_count is not None:
        output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
    if usage.prompt_token_count is None and output is None:
        return None
    return Usage(
        input_tokens=usage.prompt_token_count,
        output_tokens=output,
        cached_input_tokens=usage.cached_content_token_count,
        reasoning_tokens=usage.thoughts_token_count,
    )


def to_finish_reason(raw: types.FinishReason | str | None, *, has_tool_calls: bool = False) -> FinishReason | None:
    """Map Gemini's finish reason; a candidate that made function calls finished for ``tool_calls``."""
    if raw is None:
        return None
    if has_tool_calls:
        return "tool_calls"
    name = raw.value if isinstance(raw, types.FinishReason) else raw
    return _FINISH_REASONS.get(name, "stop")


def _tool_call(part: types.Part, id_factory: Callable[[], str], model: str) -> ToolCallPart:
    call = part.function_call
    assert call is not None
    arguments = json.dumps(call.args or {}, ensure_ascii=False, separators=(",", ":"))
    made = make_tool_call(call.id or id_factory(), call.name or "", arguments)
    return replace(made, opaque=call_state(call.id, part.thought_signature, model))


def _first_candidate(response: types.GenerateContentResponse) -> types.Candidate | None:
    # ironhive never asks for more than one candidate.
    return next((c for c in response.candidates or () if c.index in (None, 0)), None)


def _blocked(response: types.GenerateContentResponse) -> bool:
    feedback = response.prompt_feedback
    return not response.candidates and feedback is not None and feedback.block_reason is not None


class StreamAccumulator:
    """Turns streamed ``GenerateContentResponse`` chunks into ``ChatUpdate``s.

    Gemini sends each function call whole; they are held back and emitted together with the finish reason. Every
    chunk carries the running token counts, so only the last is reported, as the final update.

    Args:
        id_factory: Makes an id for a function call that arrives without one.
        model: The model answering; its calls keep their wire ids and thought signatures as state stamped with it.
    """

    def __init__(self, id_factory: Callable[[], str], model: str) -> None:
        self._id_factory = id_factory
        self._model = model
        self._calls: list[ToolCallPart] = []
        self._thoughts: list[str] = []  # thought text since the last signature closed a block
        self._usage: Usage | None = None
        self._finished = False

    def feed(self, chunk: types.GenerateContentResponse) -> list[ChatUpdate]:
        """Read one chunk and return the updates it completes."""
        if chunk.usage_metadata is not None:
            self._usage = to_usage(chunk.usage_metadata) or self._usage
        if _blocked(chunk):
            self._finished = True
            return [ChatUpdate(finish_reason="content_filter")]
        candidate = _first_candidate(chunk)
        if candidate is None:
            return []
        updates: list[ChatUpdate] = []
        for part in candidate.content.parts or () if candidate.content else ():
            if part.function_call is not None:
                self._calls.append(_tool_call(part, self._id_factory, self._model))
                continue
            if part.text and part.thought:
                self._thoughts.append(part.text)
                updates.append(ChatUpdate(thinking_delta=part.text))
            elif part.text:
                updates.append(ChatUpdate(text_delta=part.text))
            if part.thought_signature:
                thoughts, self._thoughts = "".join(self._thoughts), []
                block = text_signature_part(thoughts, part.thought_signature, self._model)
                updates.append(ChatUpdate(thinking_block=block))
        if candidate.finish_reason is not None and not self._finished:
            self._finished = True
            calls, self._calls = tuple(self._calls), []
            reason = to_finish_reason(candidate.finish_reason, has_tool_calls=bool(calls))
            updates.append(ChatUpdate(tool_calls=calls, finish_reason=reason))
        return updates

    def finish(self) -> list[ChatUpdate]:
        """Flush calls of a stream that ended without a finish reason, then the usage."""
        updates: list[ChatUpdate] = []
        if self._calls:
            updates.append(ChatUpdate(tool_calls=tuple(self._calls)))
            self._calls = []
        if self._usage is not None:
            updates.append(ChatUpdate(usage=self._usage))
            self._usage = None
        return updates


def to_chat_response(
    response: types.GenerateContentResponse, id_factory: Callable[[], str], model: str
) -> ChatResponse:
    """Map a whole (non-streamed) response onto a ``ChatResponse``.

    Args:
        response: Gemini's answer.
        id_factory: Makes an id for a function call that arrives without one.
        model: The model that answered; its calls keep their wire ids and thought signatures as state stamped with it.
    """
    usage = to_usage(response.usage_metadata) if response.usage_metadata is not None else None
    candidate = _first_candidate(response)
    if candidate is None:
        reason: FinishReason | None = "content_filter" if _blocked(response) else None
        return ChatResponse(message=ChatMessage(role=Role.ASSISTANT), usage=usage, finish_reason=reason)
    thoughts: list[str] = []
    texts: list[str] = []
    calls: list[ToolCallPart] = []
    signature: bytes | None = None  # the last one on a part that is not a call
    for part in candidate.content.parts or () if candidate.content else ():
        if part.function_call is not None:
            calls.append(_tool_call(part, id_factory, model))
            continue
        if part.text:
            (thoughts if part.thought else texts).append(part.text)
        signature = part.thought_signature or signature
    parts: list[ContentPart] = []
    if signature is not None:
        parts.append(text_signature_part("".join(thoughts), signature, model))
    elif thoughts:
        parts.append(ThinkingPart(text="".join(thoughts)))
    if texts:
        parts.append(TextPart(text="".join(texts)))
    parts.extend(calls)
    return ChatResponse(
        message=ChatMessage(role=Role.ASSISTANT, parts=tuple(parts)),
        usage=usage,
        finish_reason=to_finish_reason(candidate.finish_reason, has_tool_calls=bool(calls)),
    )


__all__ = [
    "DUMMY_THOUGHT_SIGNATURE",
    "THINKING_BUDGETS",
    "THINKING_LEVELS",
    "GeminiRequest",
    "StreamAccumulator",
    "build_request",
    "to_chat_response",
    "to_finish_reason",
    "to_function_calling_config",
    "to_function_declaration",
    "to_gemini_contents",
    "to_thinking_config",
    "to_usage",
    "uses_thinking_level",
]
