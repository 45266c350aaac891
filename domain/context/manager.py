"""ContextManager: prepares every request sent to the model so that it fits the context window (inventory §D.9)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ironhive.domain.context.compaction import HistoryCompactor, Summarizer
from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.fit import fit_to_limit
from ironhive.domain.context.goal import drop_injected, reminder_message, should_remind, user_requests
from ironhive.domain.context.masking import calls_by_id, mask_message, masking_scope
from ironhive.domain.context.provider_counts import ProviderCountCheck
from ironhive.domain.context.tokens import (
    DEFAULT_COUNTER,
    CalibratedCounter,
    MessageTokenCache,
    ProviderTokenCounter,
    TokenCounter,
)
from ironhive.domain.context.tool_results import cut_message_results
from ironhive.domain.context.triggers import TokenTrigger, trigger_for
from ironhive.domain.errors import ContextOverflowError
from ironhive.ports.chat import ChatMessage, Role, ToolCallPart, ToolSpec

OVERFLOW_LEARNING_RATIO = 0.9
"""Share of an overflowing request's estimate taken as the window when the provider states none (see below)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CompactionReport:
    """What compaction did to one request.

    Attributes:
        tokens_before: Estimate of the request without compaction (masking and tool-result cuts applied), the tool
            definitions sent with it included.
        tokens_after: Estimate of the request sent, tool definitions included.
        messages_summarized: Messages a summary stands for.
        messages_dropped: Messages removed from the request.
        summary_used: Whether a summary was inserted.
        parts_cut: Texts, results or arguments cut to make the request fit after compaction (the user's message
            included).
        summary_error: Why the summarizer failed, when it did.
        chars_cut: Characters those cuts removed, net of the markers left in their place.
    """

    tokens_before: int
    tokens_after: int
    messages_summarized: int
    messages_dropped: int
    summary_used: bool
    parts_cut: int = 0
    summary_error: str | None = None
    chars_cut: int = 0


class PreparedContext:
    """A request ready to send.

    Attributes:
        messages: The messages to send (a new tuple; the caller's history is untouched).
        window: The window they were prepared for (``None`` when unknown).
        report: What compaction did, or ``None`` when the request was not compacted.
    """

    __slots__ = ("_count", "_tokens", "messages", "report", "window")

    def __init__(
        self,
        *,
        messages: tuple[ChatMessage, ...],
        tokens: int | Callable[[], int],
        window: int | None,
        report: CompactionReport | None = None,
    ) -> None:
        """Create a prepared request; ``tokens`` may be a function that counts them when first read."""
        self.messages = messages
        self.window = window
        self.report = report
        self._count = tokens if callable(tokens) else None
        self._tokens = tokens if isinstance(tokens, int) else None

    @property
    def tokens(self) -> int:
        """The messages' token estimate, counted when first read (a request sent whole needs no exact count)."""
        if self._tokens is None:
            assert self._count is not None
            self._tokens = self._count()
        return self._tokens

    def __repr__(self) -> str:
        return f"PreparedContext(messages={len(self.messages)}, window={self.window}, report={self.report!r})"


class ContextManager:
    """Prepares requests for one conversation: masking, tool-result cuts, compaction and the goal reminder.

    Only what is sent is reduced: ``prepare`` never changes the caller's messages, so the stored history keeps every
    full tool result. Steps, in the order of inventory §D.9: remove earlier injected reminders; cut big tool results
    and mask old ones (one pass, see ``_transform``); compact when the trigger fires for a known window; append the
    goal reminder. With an unknown window nothing is compacted against a guess: the caller sends the request and, on
    a ``ContextOverflowError``, calls ``prepare_after_overflow``, which learns the window and compacts for it.
    """

    def __init__(
        self,
        config: CompactionConfig | None = None,
        *,
        window: int | None = None,
        counter: TokenCounter = DEFAULT_COUNTER,
        summarizer: Summarizer | None = None,
        cache_entries: int = 65536,
        provider_counter: ProviderTokenCounter | None = None,
    ) -> None:
        """Create a manager.

        Args:
            config: The compaction settings (defaults when ``None``).
            window: The model's context window; ``None`` uses ``config.max_context_tokens`` (which may be unknown too).
                Resolve it with ``ironhive.domain.context.catalog.context_window``.
            counter: The token estimate.
            summarizer: Writes summaries of pruned history; ``None`` drops it with a marker.
            cache_entries: Messages whose counts and cut/masked versions are remembered.
            provider_counter: The model's count endpoint, asked near the trigger when ``counter`` is corrected by
                reported usage (see ``ProviderCountCheck``).
        """
        self._config = config or CompactionConfig()
        self._window = _check_window(window if window is not None else self._config.max_context_tokens)
        self._learned: int | None = None
        self._summarizer = summarizer
        self._tokens = MessageTokenCache(counter, max_entries=cache_entries)
        self._check = (
            ProviderCountCheck(provider_counter, self._tokens, counter.calibration)
            if provider_counter is not None and isinstance(counter, CalibratedCounter)
            else None
        )
        self._compactor = HistoryCompactor(self._config, tokens=self._tokens, summarizer=summarizer)
        self._cache_entries = cache_entries
        self._transformed: dict[int, tuple[ChatMessage, bool, ChatMessage]] = {}

    @property
    def config(self) -> CompactionConfig:
        """The compaction settings."""
        return self._config

    @property
    def window(self) -> int | None:
        """The window given (or configured); ``None`` when unknown."""
        return self._window

    @window.setter
    def window(self, value: int | None) -> None:
        # A new window means a new model (provider failover): what was learned about the old one no longer holds,
        # and the selected model's count endpoint no longer counts for it.
        self._window = _check_window(value)
        self._learned = None
        self._check = None

    @property
    def provider_counts(self) -> int:
        """How many requests the provider's count endpoint was asked to count."""
        return self._check.requests_counted if self._check is not None else 0

    @property
    def learned_window(self) -> int | None:
        """The window learned from an overflow error, when one was."""
        return self._learned

    @property
    def effective_window(self) -> int | None:
        """The window requests are prepared for: the learned one, else the given one."""
        return self._learned if self._learned is not None else self._window

    def with_window(self, window: int | None) -> ContextManager:
        """Return a manager for another model's window with the same settings, counter and summarizer."""
        return ContextManager(
            self._config,
            window=window,
            counter=self._tokens.counter,
            summarizer=self._summarizer,
            cache_entries=self._cache_entries,
        )

    async def prepare(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = ()) -> PreparedContext:
        """Prepare the request for ``messages``, compacting pre-emptively when the window is known.

        Args:
            messages: The whole conversation, system messages included, oldest first.
            tools: The definitions sent with the request: they take their share of the window.

        Returns:
            The messages to send and what compaction did.
        """
        return await self._prepare(messages, self.effective_window, tools, force=False)

    async def prepare_after_overflow(
        self, messages: Sequence[ChatMessage], error: ContextOverflowError, *, tools: Sequence[ToolSpec] = ()
    ) -> PreparedContext:
        """Learn the window from an overflow error and prepare ``messages`` again, compacted for it.

        The learned window is the smaller of the window the provider stated and 90 % of the estimate of the request
        that overflowed (what ``prepare`` produced for ``messages``). The second bound matters when our estimate
        undercounts the provider's tokenizer: a request we counted as E tokens did not fit, so requests must stay
        below E whatever window was stated. Call it once per request; a second overflow should propagate.

        Args:
            messages: The conversation whose request overflowed.
            error: The provider's overflow error.
            tools: The definitions sent with the request.

        Returns:
            The compacted request.

        Raises:
            ContextOverflowError: ``error`` itself, when ``compact_on_overflow`` is off.
        """
        if not self._config.compact_on_overflow:
            raise error
        sent = await self._prepare(messages, self.effective_window, tools, force=False)
        learned = math.floor((sent.tokens + self._tokens.count_tools(tools)) * OVERFLOW_LEARNING_RATIO)
        if error.window is not None:
            learned = min(learned, error.window)
        self._learned = max(1, learned)
        return await self._prepare(messages, self._learned, tools, force=True)

    async def _prepare(
        self, messages: Sequence[ChatMessage], window: int | None, tools: Sequence[ToolSpec], *, force: bool
    ) -> PreparedContext:
        history = drop_injected(messages)
        requests = user_requests(history)
        prepared = self._transform(history)
        settings = self._config.goal_reminder
        reminder = reminder_message(prepared, settings, requests=requests)
        report: CompactionReport | None = None
        if window is not None:
            prepared, report = await self._compact(prepared, window, reminder, tools, force=force)
        reminded = reminder is not None and should_remind(prepared, settings)
        if reminded and reminder is not None:
            prepared.append(reminder)
        sent = tuple(prepared)
        if report is None:
            return PreparedContext(messages=sent, tokens=lambda: self._tokens.count_all(sent), window=window)
        tokens = self._tokens.count_all(sent)
        before = report.tokens_before + (self._tokens.count(reminder) if reminded and reminder is not None else 0)
        report = replace(report, tokens_before=before, tokens_after=tokens + self._tokens.count_tools(tools))
        return PreparedContext(messages=sent, tokens=tokens, window=window, report=report)

    async def _compact(
        self,
        messages: list[ChatMessage],
        window: int,
        reminder: ChatMessage | None,
        tools: Sequence[ToolSpec],
        *,
        force: bool,
    ) -> tuple[list[ChatMessage], CompactionReport | None]:
        trigger = trigger_for(self._config, window)

        def fires(tokens: int) -> bool:
            # A request over the window is compacted whatever the trigger says (a legacy threshold of 1.0 never fires).
            # Both rules grow with the tokens, so a bound that does not fire proves that the count would not either.
            return tokens > window or trigger.should_compact(tokens, window)

        tokens, check = self._tokens, self._check
        if not force:
            bound = tokens.bound_all(messages)
            bound = check.upper(bound) if check is not None else bound  # what the provider might count
            bound += tokens.bound_tools(tools) + (tokens.bound(reminder) if reminder is not None else 0)
            if not fires(bound):
                return messages, None  # settled without counting: no tokenizer loaded far from the trigger
        # The request grows by the reminder and is sent with the tool definitions: both take window space.
        definitions = tokens.count_tools(tools)
        reserve = (tokens.count(reminder) if reminder is not None else 0) + definitions
        if check is not None:
            current = await check.current(messages, reserve, fires)
        else:
            current = tokens.count_all(messages)
        target = max(1, math.floor(window * self._config.target_ratio) - reserve)
        if not (force or fires(current + reserve)):
            return messages, None
        # The legacy trigger only changes when compaction starts; what it keeps is sized alike (clamped for the window).
        protect = TokenTrigger.for_window(self._config, window).protect_recent_tokens
        result = await self._compactor.compact(messages, target=target, protect_recent=protect)
        fitted = fit_to_limit(result.messages, limit=target, tokens=self._tokens)
        if not (result.messages_dropped or fitted.parts_cut or fitted.messages_dropped or result.summary_error):
            return fitted.messages, None
        return fitted.messages, CompactionReport(
            tokens_before=current + definitions,
            tokens_after=0,
            messages_summarized=result.messages_summarized,
            messages_dropped=result.messages_dropped + fitted.messages_dropped,
            summary_used=result.summary_used,
            parts_cut=fitted.parts_cut,
            summary_error=result.summary_error,
            chars_cut=fitted.chars_cut,
        )

    def _transform(self, history: list[ChatMessage]) -> list[ChatMessage]:
        """Cut big tool results and mask old ones, in one pass over the tool messages.

        Equivalent to §D.9's "cut, then mask" (a masked result reaches the model in neither form) except that the
        placeholder states the size of the real result, which is what the model weighs before calling the tool again.
        Each version is cached by the identity of the caller's (immutable) message, so that a long history costs
        dictionary lookups rather than text work on every call, and its token count stays cached too.
        """
        config = self._config
        masking = config.enable_observation_masking
        cutting = config.enable_tool_result_compaction
        if not masking and not cutting:
            return history
        scope = (
            masking_scope(
                history,
                protected_turns=config.observation_masking_protected_turns,
                protected_rounds=config.observation_masking_protected_rounds,
            )
            if masking
            else None
        )
        all_calls: dict[str, ToolCallPart] | None = None
        result: list[ChatMessage] = []
        for index, message in enumerate(history):
            if message.role is not Role.TOOL:
                result.append(message)
                continue
            masked = scope is not None and scope[index]
            entry = self._transformed.get(id(message))
            if entry is not None and entry[0] is message and entry[1] == masked:
                result.append(entry[2])
                continue
            if masked:
                calls = _calls_answered(history, index)
                if any(result.call_id not in calls for result in message.tool_results):
                    all_calls = all_calls if all_calls is not None else calls_by_id(history)
                    calls = all_calls
                version = mask_message(message, calls, min_length=config.observation_masking_min_result_length)
            else:
                version = message
            if cutting:
                version = cut_message_results(
                    version,
                    max_chars=config.max_tool_result_chars,
                    head_lines=config.tool_result_keep_head_lines,
                    tail_lines=config.tool_result_keep_tail_lines,
                )
            if len(self._transformed) >= self._cache_entries:
                for key in list(self._transformed)[: self._cache_entries // 2]:
                    del self._transformed[key]
            self._transformed[id(message)] = (message, masked, version)
            result.append(version)
        return result


def _calls_answered(history: Sequence[ChatMessage], index: int) -> dict[str, ToolCallPart]:
    """The calls of the assistant message a tool message answers (the nearest one before it)."""
    while index > 0:
        index -= 1
        message = history[index]
        if message.role is not Role.TOOL:
            return {call.call_id: call for call in message.tool_calls} if message.role is Role.ASSISTANT else {}
    return {}


def _check_window(window: int | None) -> int | None:
    if window is not None and window < 1:
        raise ValueError(f"A context window must be a positive number of tokens, not {window}.")
    return window
