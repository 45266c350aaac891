"""The agent loop: one turn = model call → tool rounds → answer, with the history kept across turns."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Generator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Protocol

from ironhive.domain.context.manager import ContextManager, PreparedContext
from ironhive.domain.errors import ContextOverflowError, ToolError
from ironhive.domain.invocation.pipeline import ToolInvocation, ToolInvocationPipeline
from ironhive.domain.options import ChatBehavior, merge_options
from ironhive.domain.sync_runner import Finalizer, SyncRunner
from ironhive.domain.turn import (
    AddendumChunk,
    AgentChunk,
    ContextCompactedChunk,
    FallbackChunk,
    TextDelta,
    ThinkingDelta,
    ToolCallChunk,
    ToolCallRecord,
    ToolResultChunk,
    TurnCompleted,
    TurnRecord,
    UsageChunk,
)
from ironhive.domain.turn_options import turn_override
from ironhive.ports.chat import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    ContentPart,
    FinishReason,
    Role,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from ironhive.ports.system import Clock
from ironhive.ports.tools import Tool


class TurnObserver(Protocol):
    """Looks at a finished turn and may leave a note for the user (the addendum), never stored in the history."""

    def observe(self, turn: TurnRecord) -> str | None:
        """Return a note about ``turn``, or ``None`` for nothing to say."""
        ...


@dataclass(kw_only=True, slots=True)
class _Round:
    """What one model round-trip produced."""

    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: list[ToolCallPart] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: FinishReason | None = None
    blocks: list[ThinkingPart] = field(default_factory=list)  # closed reasoning blocks with their provider state
    closed: int = 0  # how many of ``thinking`` the closed blocks cover

    def close_block(self, block: ThinkingPart) -> None:
        self.blocks.append(block)
        self.closed = len(self.thinking)

    def message(self) -> ChatMessage:
        parts: list[ContentPart] = [*self.blocks]
        if open_thinking := self.thinking[self.closed :]:
            parts.append(ThinkingPart(text="".join(open_thinking)))
        if self.text:
            parts.append(TextPart(text="".join(self.text)))
        parts.extend(self.calls)
        return ChatMessage(role=Role.ASSISTANT, parts=tuple(parts))


class AgentLoop:
    """Runs turns against a chat client, invoking tools inside each turn.

    Each turn appends the user message, calls the model, runs the tools it asks for (through the tool invocation
    pipeline) and calls the model again with their results, until it answers without tool calls. A turn is atomic in
    the history: a turn that fails or is cancelled leaves the history as it was.

    Async code uses ``run``/``run_streaming``; synchronous code ``run_sync``/``run_streaming_sync``, which share one
    private event loop (closed by ``close()``). Every method takes ``tools=[...]``, the registered tools (by name or
    as the tool object) offered this turn::

        turn = agent.run_sync("Weather in Paris?", tools=["weather"])
        for chunk in agent.run_streaming_sync("And in Rome?"):
            if isinstance(chunk, TextDelta):
                print(chunk.text, end="")
    """

    def __init__(
        self,
        chat_client: ChatClient,
        *,
        clock: Clock,
        tools: Sequence[Tool] = (),
        system_prompt: str | None = None,
        options: ChatOptions | None = None,
        behavior: ChatBehavior | None = None,
        pipeline: ToolInvocationPipeline | None = None,
        observers: Sequence[TurnObserver] = (),
        context: ContextManager | None = None,
    ) -> None:
        self._client = chat_client
        self._clock = clock
        self._tools = {tool.spec.name: tool for tool in tools}
        self._system_prompt = system_prompt
        configured = options or ChatOptions()
        if configured.tools is None:
            configured = replace(configured, tools=tuple(tool.spec for tool in tools))
        self._options = configured
        self._behavior = behavior or ChatBehavior()
        self._pipeline = pipeline or ToolInvocationPipeline()
        self._observers = tuple(observers)
        self._context = context
        self._history: list[ChatMessage] = []
        self._sync = SyncRunner()

    @property
    def history(self) -> tuple[ChatMessage, ...]:
        """The conversation so far (without the system prompt)."""
        return tuple(self._history)

    def reset(self, history: Sequence[ChatMessage] = ()) -> None:
        """Start over with ``history`` (a restored session) or an empty conversation.

        System messages in ``history`` are dropped: the loop's own system prompt leads every request.
        """
        self._history = [message for message in history if message.role is not Role.SYSTEM]

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The registered tools."""
        return tuple(self._tools.values())

    @property
    def options(self) -> ChatOptions:
        """The configured options every turn starts from."""
        return self._options

    async def run(
        self, prompt: str, options: ChatOptions | None = None, *, tools: Sequence[str | Tool] | None = None
    ) -> TurnRecord:
        """Run one turn with non-streaming model calls.

        Args:
            prompt: The user's message.
            options: This turn's option override, merged field by field onto the configured options.
            tools: The registered tools offered this turn, by name or as the tool object (``[]`` offers none);
                replaces ``options.tools``.

        Returns:
            The turn record.

        Raises:
            TurnOptionsError: ``tools`` names a tool that is not registered.
        """
        override = self._override(options, tools)
        async with aclosing(self._turn(prompt, override, streaming=False)) as chunks:
            async for chunk in chunks:
                if isinstance(chunk, TurnCompleted):
                    return chunk.turn
        raise AssertionError("a turn always ends with TurnCompleted")  # pragma: no cover

    def run_streaming(
        self, prompt: str, options: ChatOptions | None = None, *, tools: Sequence[str | Tool] | None = None
    ) -> AsyncGenerator[AgentChunk, None]:
        """Run one turn, streaming its chunks; the last chunk is a ``TurnCompleted``.

        Args:
            prompt: The user's message.
            options: This turn's option override, merged field by field onto the configured options.
            tools: The registered tools offered this turn, by name or as the tool object (``[]`` offers none);
                replaces ``options.tools``.

        Returns:
            An async generator of chunks (``aclose()`` it to stop early).

        Raises:
            TurnOptionsError: ``tools`` names a tool that is not registered (raised here, not when iterating).
        """
        return self._turn(prompt, self._override(options, tools), streaming=True)

    def run_sync(
        self, prompt: str, options: ChatOptions | None = None, *, tools: Sequence[str | Tool] | None = None
    ) -> TurnRecord:
        """``run`` for synchronous code: runs the turn on this agent's private event loop and returns its record.

        Args:
            prompt: The user's message.
            options: This turn's option override, merged field by field onto the configured options.
            tools: The registered tools offered this turn, by name or as the tool object (``[]`` offers none).

        Returns:
            The turn record.

        Raises:
            RuntimeError: Called while an event loop runs in this thread (async code, a notebook): use
                ``await agent.run(...)`` there.
            TurnOptionsError: ``tools`` names a tool that is not registered.
        """
        override = self._override(options, tools)
        return self._sync.run(lambda: self.run(prompt, override), caller="run_sync", instead="await agent.run(...)")

    def run_streaming_sync(
        self, prompt: str, options: ChatOptions | None = None, *, tools: Sequence[str | Tool] | None = None
    ) -> Generator[AgentChunk, None, None]:
        """``run_streaming`` for synchronous code: an iterator of the same chunks, the last a ``TurnCompleted``.

        The turn runs in one task on this agent's private event loop, at most one chunk ahead of the caller. Leaving
        the loop early (``break``, an exception) cancels the turn and leaves the history as it was.

        Args:
            prompt: The user's message.
            options: This turn's option override, merged field by field onto the configured options.
            tools: The registered tools offered this turn, by name or as the tool object (``[]`` offers none).

        Returns:
            A generator of chunks (``close()`` it to stop early when not iterating it to the end in a ``for``).

        Raises:
            RuntimeError: Called while an event loop runs in this thread: use ``agent.run_streaming(...)`` there.
            TurnOptionsError: ``tools`` names a tool that is not registered.
        """
        override = self._override(options, tools)
        return self._sync.iterate(
            lambda: self._turn(prompt, override, streaming=True),
            caller="run_streaming_sync",
            instead="async for chunk in agent.run_streaming(...)",
        )

    def close(self, *finalizers: Finalizer) -> None:
        """Close the private event loop of the ``*_sync`` methods, after running ``finalizers`` on it.

        Things bound to that loop (a provider's HTTP client used by ``run_sync``) must be closed on it: pass their
        clean-up, e.g. ``agent.close(client.aclose)``. Idempotent; callable from async code too. A later ``*_sync``
        call opens a new loop.

        Args:
            finalizers: Async clean-up steps, run one after another (on a fresh loop when none was opened).
        """
        self._sync.close(*finalizers)

    def _override(self, options: ChatOptions | None, tools: Sequence[str | Tool] | None) -> ChatOptions | None:
        if tools is None:
            return options
        if isinstance(tools, str):
            tools = (tools,)
        names = [tool if isinstance(tool, str) else tool.spec.name for tool in tools]
        offered = turn_override(tuple(tool.spec for tool in self._tools.values()), tool_names=names).tools
        return replace(options or ChatOptions(), tools=offered)

    async def _turn(
        self, prompt: str, override: ChatOptions | None, *, streaming: bool
    ) -> AsyncGenerator[AgentChunk, None]:
        if not prompt or not prompt.strip():
            raise ValueError("The prompt must not be empty.")
        started = self._clock.monotonic()
        options = merge_options(self._options, override)
        turn_messages: list[ChatMessage] = [ChatMessage.of_text(Role.USER, prompt)]
        records: list[ToolCallRecord] = []
        text: list[str] = []
        thinking: list[str] = []
        usage = Usage()
        finish_reason: FinishReason | None = None
        tool_rounds = 0
        failed_rounds = 0
        while True:
            round_options = options
            if tool_rounds >= self._behavior.maximum_iterations_per_request:
                # Out of tool rounds: one last call without tools so the model answers in text.
                round_options = replace(options, tools=(), tool_mode="none")
            result = _Round()
            async for chunk in self._prepared_call(self._request(turn_messages), round_options, result, streaming):
                yield chunk
            if result.text:
                text.append("".join(result.text))
            thinking.extend(result.thinking)
            if result.usage is not None:
                usage = usage + result.usage
            finish_reason = result.finish_reason
            turn_messages.append(result.message())
            if not result.calls:
                break
            tool_rounds += 1
            results: list[ToolResultPart] = []
            terminate = False
            raised = False
            for call in result.calls:
                invocation = ToolInvocation(
                    call=call,
                    tool=self._offered_tool(call.name, round_options),
                    arguments=dict(call.arguments or {}),
                    conversation=(*turn_messages, ChatMessage(role=Role.TOOL, parts=tuple(results))),
                )
                outcome = await self._pipeline.invoke(invocation)
                record = ToolCallRecord(
                    call_id=call.call_id,
                    name=call.name,
                    arguments_text=call.arguments_text,
                    result=outcome.result,
                    success=outcome.success,
                )
                records.append(record)
                results.append(
                    ToolResultPart(call_id=call.call_id, name=call.name, result=outcome.result, success=outcome.success)
                )
                terminate = terminate or outcome.terminate
                raised = raised or outcome.raised
                yield ToolResultChunk(record=record)
            turn_messages.append(ChatMessage(role=Role.TOOL, parts=tuple(results)))
            if terminate:
                break
            failed_rounds = failed_rounds + 1 if raised else 0
            if failed_rounds > self._behavior.maximum_consecutive_errors_per_request:
                raise ToolError(
                    f"The request was stopped: tools failed in {failed_rounds} rounds in a row. "
                    f"Last error: {results[-1].result}"
                )
            if options.tool_mode is not None and options.tool_mode.startswith("require"):
                # A required call was made; requiring it again would loop forever.
                options = replace(options, tool_mode="auto")
        self._history.extend(turn_messages)
        turn = TurnRecord(
            content="\n\n".join(piece for piece in text if piece.strip()),
            thinking="".join(thinking),
            tool_calls=tuple(records),
            usage=usage,
            finish_reason=finish_reason,
            messages=tuple(turn_messages),
            duration_ms=int((self._clock.monotonic() - started) * 1000),
        )
        addendum = self._addendum(turn)
        if addendum is not None:
            turn = replace(turn, addendum=addendum)
            yield AddendumChunk(text=addendum)
        yield TurnCompleted(turn=turn)

    def _request(self, turn_messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        system = [ChatMessage.of_text(Role.SYSTEM, self._system_prompt)] if self._system_prompt else []
        return [*system, *self._history, *turn_messages]

    async def _prepared_call(
        self, request: list[ChatMessage], options: ChatOptions, result: _Round, streaming: bool
    ) -> AsyncGenerator[AgentChunk, None]:
        """One model call of the turn on a request prepared to fit the window (only what is sent is reduced).

        When the window is unknown and the provider reports an overflow, the request is compacted for the window the
        error reveals and sent once more; a second overflow propagates.
        """
        if self._context is None:
            async for chunk in self._call_model(request, options, result, streaming):
                yield chunk
            return
        tools = options.tools or ()  # their definitions take window space too
        prepared = await self._context.prepare(request, tools=tools)
        if (notice := _compaction_chunk(prepared)) is not None:
            yield notice
        try:
            async for chunk in self._call_model(prepared.messages, options, result, streaming):
                yield chunk
        except ContextOverflowError as overflow:
            if result.text or result.thinking or result.calls:
                raise  # output already reached the user: retrying would duplicate it
            prepared = await self._context.prepare_after_overflow(request, overflow, tools=tools)
            if (notice := _compaction_chunk(prepared)) is not None:
                yield notice
            async for chunk in self._call_model(prepared.messages, options, result, streaming):
                yield chunk

    def _offered_tool(self, name: str, options: ChatOptions) -> Tool | None:
        offered = options.tools or ()
        return self._tools.get(name) if any(spec.name == name for spec in offered) else None

    async def _call_model(
        self, messages: Sequence[ChatMessage], options: ChatOptions, result: _Round, streaming: bool
    ) -> AsyncIterator[AgentChunk]:
        if streaming:
            async for update in self._client.get_streaming_response(messages, options):
                if update.fallback is not None:
                    yield FallbackChunk(notice=update.fallback)
                if update.thinking_delta:
                    result.thinking.append(update.thinking_delta)
                    yield ThinkingDelta(text=update.thinking_delta)
                if update.thinking_block is not None:
                    result.close_block(update.thinking_block)
                if update.text_delta:
                    result.text.append(update.text_delta)
                    yield TextDelta(text=update.text_delta)
                for call in update.tool_calls:
                    result.calls.append(call)
                    yield ToolCallChunk(call=call)
                if update.usage is not None:
                    result.usage = update.usage if result.usage is None else result.usage + update.usage
                if update.finish_reason is not None:
                    result.finish_reason = update.finish_reason
        else:
            response = await self._client.get_response(messages, options)
            for notice in response.notices:
                yield FallbackChunk(notice=notice)
            for part in response.message.parts:
                if isinstance(part, ThinkingPart):
                    result.thinking.append(part.text)
                    result.close_block(part)
                    if part.text:
                        yield ThinkingDelta(text=part.text)
                elif isinstance(part, TextPart):
                    result.text.append(part.text)
                    yield TextDelta(text=part.text)
                elif isinstance(part, ToolCallPart):
                    result.calls.append(part)
                    yield ToolCallChunk(call=part)
            result.usage = response.usage
            result.finish_reason = response.finish_reason
        if result.usage is not None:
            yield UsageChunk(usage=result.usage)

    def _addendum(self, turn: TurnRecord) -> str | None:
        notes = [note for observer in self._observers if (note := observer.observe(turn))]
        return "\n\n".join(notes) if notes else None


def _compaction_chunk(prepared: PreparedContext) -> ContextCompactedChunk | None:
    report = prepared.report
    if report is None:
        return None
    return ContextCompactedChunk(
        tokens_before=report.tokens_before,
        tokens_after=report.tokens_after,
        messages_summarized=report.messages_summarized,
        messages_dropped=report.messages_dropped,
        summary_used=report.summary_used,
        parts_cut=report.parts_cut,
        chars_cut=report.chars_cut,
    )
