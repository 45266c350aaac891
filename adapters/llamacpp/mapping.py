"""Pure mapping between ironhive chat types and llama-cpp-python's OpenAI-shaped dicts (no I/O, no llama_cpp)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from ironhive.domain.errors import ConfigurationError
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    FinishReason,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

DEFAULT_MAX_OUTPUT_TOKENS = 512
"""Tokens generated when the options set no limit (llama.cpp's own default would fill the whole context)."""

LlamaMessage: TypeAlias = dict[str, str]
"""One chat message as llama-cpp-python's ``create_chat_completion`` takes it."""


_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def to_llama_messages(messages: Sequence[ChatMessage], *, json_turns: bool = False) -> list[LlamaMessage]:
    """Render a conversation as plain system/user/assistant text messages.

    Tool calls and tool results become readable text, so a history holding tool rounds still renders with chat
    templates that know only the three plain roles. Tool results are sent as user text because many templates reject
    any other role. Adjacent messages that end up with the same role are joined, since some templates insist that
    user and assistant turns alternate. Thinking parts are left out: models are not shown their earlier reasoning.

    Args:
        messages: The conversation, oldest first.
        json_turns: Render the assistant's turns in the JSON reply format of local tool calling
            (``{"tool": ..., "arguments": ...}`` and ``{"answer": ...}``), so the model sees its earlier replies in
            the format it is asked to write, and tool results as plain sentences ("The tool read_file returned:").

    Returns:
        The messages for ``create_chat_completion``; messages without any renderable content are dropped.
    """
    rendered: list[LlamaMessage] = []
    for message in messages:
        role = "user" if message.role is Role.TOOL else message.role.value
        content = _render_json_parts(message) if json_turns else _render_parts(message)
        if not content:
            continue
        if rendered and rendered[-1]["role"] == role:
            rendered[-1]["content"] += "\n\n" + content
        else:
            rendered.append({"role": role, "content": content})
    return rendered


def _render_parts(message: ChatMessage) -> str:
    chunks: list[str] = []
    for part in message.parts:
        match part:
            case TextPart(text=text) if text:
                chunks.append(text)
            case ToolCallPart():
                chunks.append(render_tool_call(part))
            case ToolResultPart():
                chunks.append(render_tool_result(part))
            case _:
                pass
    return "\n\n".join(chunks)


def _render_json_parts(message: ChatMessage) -> str:
    if message.role is not Role.ASSISTANT:
        return "\n\n".join(
            _render_result_plainly(part) if isinstance(part, ToolResultPart) else part.text
            for part in message.parts
            if isinstance(part, ToolResultPart) or (isinstance(part, TextPart) and part.text)
        )
    chunks: list[str] = []
    for part in message.parts:
        match part:
            case TextPart(text=text) if text:
                chunks.append(json.dumps({"answer": text}, ensure_ascii=False))
            case ToolCallPart():
                chunks.append(render_tool_call_json(part))
            case _:
                pass
    return "\n".join(chunks)


def _render_result_plainly(result: ToolResultPart) -> str:
    # The bracketed form of render_tool_result got copied into replies, or ignored, by the bundled small model; this
    # wording had it report the result.
    outcome = "failed" if result.success is False else "returned"
    return f"The tool {result.name} {outcome}:\n{result.result}"


def render_tool_call_json(call: ToolCallPart) -> str:
    """Show a tool call in the JSON reply format of local tool calling; unparsed arguments appear as sent."""
    arguments = call.arguments_text
    if call.arguments is not None:
        arguments = json.dumps(call.arguments, ensure_ascii=False)
    return f'{{"tool": {json.dumps(call.name, ensure_ascii=False)}, "arguments": {arguments}}}'


def render_tool_call(call: ToolCallPart) -> str:
    """Describe a tool call the model made, as text it can read back."""
    arguments = call.arguments_text
    if call.arguments is not None:
        arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
    return f"[Tool call {call.call_id}: {call.name}({arguments})]"


def render_tool_result(result: ToolResultPart) -> str:
    """Describe the outcome of a tool call, as text the model can read."""
    outcome = {True: "succeeded", False: "failed", None: "finished"}[result.success]
    return f"[Tool result {result.call_id}: {result.name} {outcome}]\n{result.result}"


@dataclass(frozen=True, kw_only=True, slots=True)
class CompletionSettings:
    """The sampling settings of one ``create_chat_completion`` call.

    Attributes:
        max_tokens: The most tokens to generate.
        temperature: The sampling temperature; ``None`` keeps llama-cpp-python's default.
        seed: The sampling seed; ``None`` lets llama-cpp-python choose.
    """

    max_tokens: int
    temperature: float | None = None
    seed: int | None = None

    def as_kwargs(self) -> dict[str, int | float]:
        """The settings as keyword arguments, leaving out the unset ones."""
        kwargs: dict[str, int | float] = {"max_tokens": self.max_tokens}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.seed is not None:
            kwargs["seed"] = self.seed
        return kwargs


def completion_settings(options: ChatOptions, *, seed: int | None = None) -> CompletionSettings:
    """Pick the settings of one call from its options.

    ``options.model`` is ignored (the client serves the one model it loaded); ``options.tools`` and
    ``options.tool_mode`` are read by :func:`ironhive.adapters.llamacpp.tool_calling.plan_tools`.

    Args:
        options: The options of the call.
        seed: The client's seed, applied to every call so a call is reproducible.

    Returns:
        The settings.

    Raises:
        ConfigurationError: ``max_output_tokens`` is set but not positive.
    """
    max_tokens = options.max_output_tokens
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_OUTPUT_TOKENS
    elif max_tokens < 1:
        raise ConfigurationError(f"max_output_tokens must be at least 1, got {max_tokens}")
    return CompletionSettings(max_tokens=max_tokens, temperature=options.temperature, seed=seed)


def finish_reason_of(value: object) -> FinishReason | None:
    """Map llama-cpp-python's ``finish_reason`` onto ours; unknown or missing values give ``None``."""
    return _FINISH_REASONS.get(value) if isinstance(value, str) else None


def text_delta_of(chunk: Mapping[str, object]) -> tuple[str, object]:
    """Read the text and the raw finish reason of one streamed ``chat.completion.chunk``.

    Returns:
        The text the chunk adds (``""`` for role-only and final chunks) and its ``finish_reason`` as sent.
    """
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "", None
    choice = choices[0]
    delta = choice.get("delta")
    text = delta.get("content") if isinstance(delta, dict) else None
    return (text if isinstance(text, str) else ""), choice.get("finish_reason")


class TokenCounter:
    """Counts prompt and sampled tokens of one generation (llama-cpp-python reports no usage when streaming).

    The worker calls :meth:`sampled` for each token llama-cpp-python's ``generate`` yields, with the number of prompt
    tokens it was given (the prompt llama.cpp evaluated, after applying the chat template).
    """

    def __init__(self) -> None:
        self.prompt_tokens: int | None = None
        self.sampled_tokens = 0
        self._end_token_sampled = True

    def sampled(self, prompt_tokens: int) -> None:
        """Record one sampled token of a generation from a prompt of ``prompt_tokens`` tokens."""
        if self.prompt_tokens is None:
            self.prompt_tokens = prompt_tokens
        self.sampled_tokens += 1

    def ended_without_end_token(self) -> None:
        """The generation stopped (finish reason ``stop``) before the model sampled its end-of-generation token."""
        self._end_token_sampled = False

    def usage(self, finish_reason: FinishReason | None) -> Usage:
        """The usage of the finished generation.

        Args:
            finish_reason: How the generation ended.

        Returns:
            Prompt and completion tokens, counted like llama-cpp-python's non-streaming ``usage``: an end-of-generation
            token ends a ``stop`` and is sampled but not part of the completion.
        """
        completion = self.sampled_tokens
        if finish_reason == "stop" and completion > 0 and self._end_token_sampled:
            completion -= 1
        return Usage(input_tokens=self.prompt_tokens, output_tokens=completion)
