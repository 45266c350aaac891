"""ScriptedChatClient: plays back scripted steps (text, deltas, thinking, tool calls, errors or a function)."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ironhive.domain.errors import ProviderError
from ironhive.domain.tool_calls import make_tool_call
from ironhive.ports.chat import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatUpdate,
    ContentPart,
    FinishReason,
    JsonValue,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
)


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptedToolCall:
    """A tool call a step makes; ``arguments`` as an object or as raw (possibly broken) JSON text."""

    name: str
    arguments: Mapping[str, JsonValue] | str = field(default_factory=dict)
    call_id: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptStep:
    """One scripted model response.

    Attributes:
        text: The answer; streamed word by word unless ``deltas`` is given.
        deltas: The answer as explicit stream pieces.
        thinking: Reasoning text, streamed before the answer.
        tool_calls: Calls the model makes.
        error: Raised instead of answering.
        usage: Reported token counts.
        delay_seconds: Pause before each streamed piece (to test cancellation).
        finish_reason: Why the response ended; ``None`` says ``tool_calls`` with calls, else ``stop``.
    """

    text: str = ""
    deltas: tuple[str, ...] = ()
    thinking: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    error: Exception | None = None
    usage: Usage | None = None
    delay_seconds: float = 0.0
    finish_reason: FinishReason | None = None

    def pieces(self) -> tuple[str, ...]:
        """The answer's stream pieces."""
        if self.deltas:
            return self.deltas
        return tuple(re.findall(r"\S+\s*|\s+", self.text))


StepFunction: TypeAlias = Callable[[Sequence[ChatMessage], ChatOptions], "ScriptStep | Awaitable[ScriptStep]"]
Step: TypeAlias = ScriptStep | StepFunction


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordedRequest:
    """A request the client received."""

    messages: tuple[ChatMessage, ...]
    options: ChatOptions
    streaming: bool


def echo_step(messages: Sequence[ChatMessage], options: ChatOptions) -> ScriptStep:
    """A step that answers with the latest user message (the keyless demo model)."""
    last = next((message.text for message in reversed(messages) if message.role is Role.USER), "")
    return ScriptStep(text=f"You said: {last}", usage=Usage(input_tokens=len(last) // 4 + 1, output_tokens=3))


class ScriptedChatClient:
    """A real ChatClient whose answers are scripted; it records every request it receives.

    Steps are used in order, one per model call. With ``repeat_last`` the last step answers every later call;
    otherwise a call past the end fails with a ProviderError saying the script ran out.
    """

    def __init__(self, steps: Iterable[Step] = (), *, repeat_last: bool = False, model: str = "scripted") -> None:
        self._steps: list[Step] = list(steps)
        self._repeat_last = repeat_last
        self._position = 0
        self._ids = itertools.count(1)
        self.model = model
        self.requests: list[RecordedRequest] = []

    def add(self, *steps: Step) -> ScriptedChatClient:
        """Append steps to the script; returns the client for chaining."""
        self._steps.extend(steps)
        return self

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        """Answer with the next step in one piece."""
        step = await self._next_step(messages, options, streaming=False)
        parts: list[ContentPart] = []
        if step.thinking:
            parts.append(ThinkingPart(text=step.thinking))
        if step.text or step.deltas:
            parts.append(TextPart(text="".join(step.pieces())))
        parts.extend(self._calls(step))
        message = ChatMessage(role=Role.ASSISTANT, parts=tuple(parts))
        return ChatResponse(message=message, usage=step.usage, finish_reason=_finish_reason(step))

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatUpdate]:
        """Answer with the next step as a stream."""
        step = await self._next_step(messages, options, streaming=True)
        if step.thinking:
            await self._pause(step)
            yield ChatUpdate(thinking_delta=step.thinking)
        for piece in step.pieces():
            await self._pause(step)
            yield ChatUpdate(text_delta=piece)
        calls = self._calls(step)
        if calls:
            yield ChatUpdate(tool_calls=calls)
        yield ChatUpdate(usage=step.usage, finish_reason=_finish_reason(step))

    async def _next_step(self, messages: Sequence[ChatMessage], options: ChatOptions, *, streaming: bool) -> ScriptStep:
        self.requests.append(RecordedRequest(messages=tuple(messages), options=options, streaming=streaming))
        if self._position < len(self._steps):
            step = self._steps[self._position]
            self._position += 1
        elif self._repeat_last and self._steps:
            step = self._steps[-1]
        else:
            raise ProviderError(
                f"The scripted model has no step left for request {len(self.requests)} "
                f"(the script has {len(self._steps)}).",
                provider="scripted",
            )
        if not isinstance(step, ScriptStep):
            produced = step(messages, options)
            step = await produced if inspect.isawaitable(produced) else produced
        if step.error is not None:
            raise step.error
        return step

    def _calls(self, step: ScriptStep) -> tuple[ToolCallPart, ...]:
        return tuple(
            make_tool_call(
                call.call_id or f"call_{next(self._ids)}",
                call.name,
                call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
            )
            for call in step.tool_calls
        )

    @staticmethod
    async def _pause(step: ScriptStep) -> None:
        if step.delay_seconds:
            await asyncio.sleep(step.delay_seconds)


class SizedScriptedChatClient(ScriptedChatClient):
    """A ScriptedChatClient that states a context window (to exercise compaction against a known window)."""

    def __init__(self, steps: Iterable[Step] = (), *, context_size: int, **settings: Any) -> None:
        super().__init__(steps, **settings)
        self._context_size = context_size

    @property
    def context_size(self) -> int:
        """The window this scripted model claims."""
        return self._context_size


def _finish_reason(step: ScriptStep) -> FinishReason:
    if step.finish_reason is not None:
        return step.finish_reason
    return "tool_calls" if step.tool_calls else "stop"
