"""The history compactor: prunes the middle of a request to a token target, summarising or dropping it.

What it keeps, whatever the target: every system message; every user message, verbatim and in order (the user's
requests and constraints are what the model must never lose); a protected tail of the most recent messages sized by
``protect_recent_tokens``; and a tool call together with its results (an exchange is kept or removed whole, because a
call without its result, or a result without its call, makes providers reject the request). On the truncating path
(no summarizer, or the summarizer failed) exchanges of ``protected_tool_outputs`` tools are removed only when removing
everything else was not enough.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ironhive.domain.context.anchor import AnchorState, extract_state
from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.goal import user_requests
from ironhive.domain.context.tokens import LIST_OVERHEAD, MESSAGE_OVERHEAD, MessageTokenCache
from ironhive.domain.context.units import Unit, UnitKind, group_units
from ironhive.ports.chat import ChatMessage, Role

Summarizer = Callable[[Sequence[ChatMessage], int], Awaitable[str]]
"""Writes a summary of the given messages in at most the given number of tokens (usually a model call)."""

SUMMARY_PREFIX = "[Previous conversation summary]: "


def omitted_messages_marker(count: int) -> str:
    """The marker that replaces ``count`` dropped messages."""
    return f"[{count} earlier messages omitted]"


@dataclass(frozen=True, kw_only=True, slots=True)
class CompactionResult:
    """A compacted request.

    Attributes:
        messages: The messages to send.
        messages_dropped: Messages removed from the request (summarised or not).
        messages_summarized: Messages the summary stands for (0 without a summary).
        summary_used: Whether a summary replaced the removed messages.
        summary_error: Why the summarizer failed, when it did (the marker was used instead).
    """

    messages: list[ChatMessage]
    messages_dropped: int
    messages_summarized: int
    summary_used: bool
    summary_error: str | None = None


class HistoryCompactor:
    """Compacts requests for one conversation; keeps the anchored state and the last summary between calls."""

    def __init__(
        self, config: CompactionConfig, *, tokens: MessageTokenCache, summarizer: Summarizer | None = None
    ) -> None:
        """Create a compactor.

        Args:
            config: The compaction settings.
            tokens: Per-message token counts.
            summarizer: Writes summaries of removed messages; ``None`` drops them with a marker.
        """
        self._config = config
        self._tokens = tokens
        self._summarizer = summarizer
        self._protected = frozenset(config.protected_tool_outputs)
        self._anchor = AnchorState()
        self._anchor_units: dict[int, tuple[tuple[ChatMessage, ...], AnchorState]] = {}
        self._summary: tuple[tuple[ChatMessage, ...], str] | None = None
        self._failed: tuple[tuple[ChatMessage, ...], str] | None = None

    @property
    def anchor_state(self) -> AnchorState:
        """The anchored state gathered so far (empty unless anchored compaction is on)."""
        return self._anchor

    async def compact(self, messages: Sequence[ChatMessage], *, target: int, protect_recent: int) -> CompactionResult:
        """Prune ``messages`` towards ``target`` tokens.

        Args:
            messages: The request (injected messages removed, tool results already masked or cut).
            target: The token estimate to reach.
            protect_recent: Tokens of most recent messages that are never removed.

        Returns:
            The compacted request; the same messages when nothing can be removed.
        """
        units = group_units(messages, self._tokens.count, self._protected)
        total = LIST_OVERHEAD + sum(unit.tokens for unit in units)
        removable = self._removable(units, protect_recent)
        anchor_reserve = self._anchor_reserve(messages, removable)
        error: str | None = None
        if self._summarizer is not None:
            summary_tokens = self._summary_tokens(target)
            reserve = anchor_reserve + summary_tokens + MESSAGE_OVERHEAD + self._tokens.counter.count(SUMMARY_PREFIX)
            removed = _plan(removable, total, target - reserve, protected_first=True)
            if removed:
                dropped = _messages(messages, removed)
                try:
                    summary = await self._summarize(messages, removed, summary_tokens)
                except Exception as failure:
                    error = str(failure) if isinstance(failure, _RememberedFailure) else _describe(failure)
                else:
                    extra = [ChatMessage.of_text(Role.SYSTEM, summary)]
                    built = self._build(messages, removed, extra)
                    return CompactionResult(
                        messages=built,
                        messages_dropped=len(dropped),
                        messages_summarized=len(dropped),
                        summary_used=True,
                    )
        marker_tokens = MESSAGE_OVERHEAD + self._tokens.counter.count(omitted_messages_marker(len(messages)))
        removed = _plan(removable, total, target - anchor_reserve - marker_tokens, protected_first=False)
        if not removed:
            unchanged = list(messages)
            return CompactionResult(
                messages=unchanged, messages_dropped=0, messages_summarized=0, summary_used=False, summary_error=error
            )
        count = sum(unit.size for unit in removed)
        marker = ChatMessage.of_text(Role.SYSTEM, omitted_messages_marker(count))
        return CompactionResult(
            messages=self._build(messages, removed, [marker]),
            messages_dropped=count,
            messages_summarized=0,
            summary_used=False,
            summary_error=error,
        )

    def _removable(self, units: list[Unit], protect_recent: int) -> list[Unit]:
        """Units before the protected tail that may go: everything but system and user messages."""
        conversation = [index for index, unit in enumerate(units) if unit.kind is not UnitKind.SYSTEM]
        if not conversation:
            return []
        tail_start = conversation[-1]  # the newest unit always stays
        kept = units[tail_start].tokens
        for index in reversed(conversation[:-1]):
            if kept + units[index].tokens > protect_recent:
                break
            kept += units[index].tokens
            tail_start = index
        return [unit for unit in units[:tail_start] if unit.kind in (UnitKind.EXCHANGE, UnitKind.OTHER)]

    def _summary_tokens(self, target: int) -> int:
        configured = self._config.summary_max_output_tokens
        return max(1, min(configured, target // 4) if configured is not None else target // 4)

    async def _summarize(self, messages: Sequence[ChatMessage], removed: list[Unit], budget: int) -> str:
        """Summarise the removed messages, reusing or extending the previous summary when the removed run grew."""
        assert self._summarizer is not None
        dropped = tuple(_messages(messages, removed))
        previous = self._summary
        if previous is not None and previous[0] == dropped:
            return previous[1]
        if self._failed is not None and self._failed[0] == dropped:
            # The same request failed to summarise a moment ago (the per-round retry, a re-prepare): don't pay again.
            raise _RememberedFailure(self._failed[1])
        # User messages among the removed ones stay in the request, but they explain the replies being summarised.
        if previous is not None and dropped[: len(previous[0])] == previous[0]:
            covered, newer = len(previous[0]), []
            for unit in removed:
                covered -= unit.size
                if covered < 0:
                    newer.append(unit)
            context = [ChatMessage.of_text(Role.SYSTEM, previous[1]), *_with_interleaved_users(messages, newer)]
        else:
            context = _with_interleaved_users(messages, removed)
        try:
            text = (await self._summarizer(context, budget)).strip()
            if not text:
                raise ValueError("the summarizer returned an empty summary")
        except Exception as failure:
            self._failed = (dropped, _describe(failure))
            raise
        # A summarizer that ignores its budget must not push the request past the target.
        limit = max(1, budget * 4)
        while len(text) > 1 and self._tokens.counter.count(text) > budget:
            limit = max(1, min(limit, len(text)) * 9 // 10)
            text = text[:limit]
        summary = SUMMARY_PREFIX + text
        self._summary = (dropped, summary)
        return summary

    def _anchor_reserve(self, messages: Sequence[ChatMessage], removable: list[Unit]) -> int:
        if not self._config.use_anchored_compaction:
            return 0
        cap = self._config.max_anchor_state_chars
        if cap > 0:
            return MESSAGE_OVERHEAD + self._tokens.counter.count("x" * min(cap, 1_000_000))
        state = self._anchor.merge(self._unit_state(messages, removable))
        return MESSAGE_OVERHEAD + self._tokens.counter.count(state.render(0))

    def _unit_state(self, messages: Sequence[ChatMessage], units: list[Unit]) -> AnchorState:
        found: list[AnchorState] = []
        for unit in units:
            key = tuple(messages[unit.start : unit.end])
            cached = self._anchor_units.get(id(key[0]))
            if cached is None or cached[0] != key:
                if len(self._anchor_units) >= 65536:
                    self._anchor_units.clear()
                cached = (key, extract_state(key))
                self._anchor_units[id(key[0])] = cached
            found.append(cached[1])
        return AnchorState().merge(*found)

    def _build(
        self, messages: Sequence[ChatMessage], removed: list[Unit], extra: list[ChatMessage]
    ) -> list[ChatMessage]:
        gone = {index for unit in removed for index in range(unit.start, unit.end)}
        if self._config.use_anchored_compaction:
            _, latest = user_requests(messages)
            found = self._unit_state(messages, removed)
            self._anchor = self._anchor.merge(found).merge(extract_state((), goal=latest))
            block = self._anchor.render(self._config.max_anchor_state_chars)
            extra = [ChatMessage.of_text(Role.SYSTEM, block), *extra]
        leading = 0
        while leading < len(messages) and messages[leading].role is Role.SYSTEM:
            leading += 1
        kept = [message for index, message in enumerate(messages) if index not in gone]
        # Injected system messages go right after the leading system messages: chat templates of local models often
        # reject a system message anywhere else.
        return [*kept[:leading], *extra, *kept[leading:]]


class _RememberedFailure(Exception):
    """The summarizer already failed on these very messages; carries that failure's description."""


def _describe(failure: Exception) -> str:
    return f"{type(failure).__name__}: {failure}"


def _plan(removable: list[Unit], total: int, target: int, *, protected_first: bool) -> list[Unit]:
    """Choose the oldest removable units whose removal brings ``total`` down to ``target``.

    With ``protected_first`` false (the truncating path) exchanges of protected tools go only in a second pass, when
    removing everything else was not enough.
    """
    remaining = total
    removed: list[Unit] = []
    taken: set[int] = set()
    passes = (True,) if protected_first else (False, True)
    for include_protected in passes:
        for unit in removable:
            if remaining <= target:
                break
            if (unit.protected and not include_protected) or unit.start in taken:
                continue
            removed.append(unit)
            taken.add(unit.start)
            remaining -= unit.tokens
    removed.sort(key=lambda unit: unit.start)
    return removed


def _messages(messages: Sequence[ChatMessage], units: list[Unit]) -> list[ChatMessage]:
    return [message for unit in units for message in messages[unit.start : unit.end]]


def _with_interleaved_users(messages: Sequence[ChatMessage], removed: list[Unit]) -> list[ChatMessage]:
    if not removed:
        return []
    gone = {index for unit in removed for index in range(unit.start, unit.end)}
    first, last = removed[0].start, removed[-1].end
    return [
        message
        for index, message in enumerate(messages[first:last], start=first)
        if index in gone or message.role is Role.USER
    ]
