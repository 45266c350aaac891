"""Token counting: the TokenCounter protocol, chars ÷ 4, the per-session correction from usage, message overheads."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from ironhive.ports.chat import ChatMessage, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, ToolSpec

MESSAGE_OVERHEAD = 4
"""Tokens every message costs beyond its text (role, separators), as the original counts them."""
LIST_OVERHEAD = 3
"""Tokens a whole request costs once (the reply priming)."""
CALL_OVERHEAD = 10
"""Tokens every function call costs beyond its name and arguments."""


@runtime_checkable
class TokenCounter(Protocol):
    """Estimates how many tokens a text costs."""

    def count(self, text: str) -> int:
        """Return the token estimate of ``text``."""
        ...


@runtime_checkable
class BoundedTokenCounter(TokenCounter, Protocol):
    """A counter that also knows a cheap upper bound of its counts (no tokenizer loaded, no model consulted)."""

    def bound(self, text: str) -> int:
        """Return a number never below ``count(text)``."""
        ...


def text_bound(counter: TokenCounter, text: str) -> int:
    """A cheap upper bound of ``counter.count(text)``: the counter's own bound, else its count (a counter without a
    bound is taken to be cheap)."""
    return counter.bound(text) if isinstance(counter, BoundedTokenCounter) else counter.count(text)


def utf8_bound(text: str) -> int:
    """The UTF-8 length of ``text``: a byte-level BPE token is at least one byte, so no such count exceeds it."""
    # A lone surrogate becomes U+FFFD (three bytes) for the tokenizer, three bytes here too.
    return len(text.encode("utf-8", "surrogatepass"))


@runtime_checkable
class ProviderTokenCounter(Protocol):
    """A provider's own count of a request (Anthropic's and Gemini's count endpoints): exact, but a network call."""

    async def count_input_tokens(self, messages: Sequence[ChatMessage]) -> int:
        """Return the input tokens the provider counts for ``messages`` (no tool definitions).

        Raises:
            ProviderError: The provider could not count them.
        """
        ...


class CharEstimateCounter:
    """The default estimate: characters ÷ 4, rounded up (conservative for English and code)."""

    def count(self, text: str) -> int:
        """Return ``ceil(len(text) / 4)``."""
        return (len(text) + 3) // 4

    def bound(self, text: str) -> int:
        """The count itself (it is cheap)."""
        return self.count(text)


DEFAULT_COUNTER = CharEstimateCounter()

MIN_FACTOR = 0.5
"""The smallest correction: reported usage can at most halve an estimate."""
MAX_FACTOR = 4.0
"""The largest correction: chars ÷ 4 on CJK text undercounts about fourfold, nothing sane more."""
MIN_SAMPLE_TOKENS = 100
"""Requests estimated below this teach nothing: fixed overheads the estimate cannot see dominate them."""
MAX_PENDING = 16
"""Reports kept for a later count at most: the newest of them that is big enough sets the factor anyway."""

Observation = Callable[[], tuple[int, int]]
"""A report learned from later: returns (uncorrected estimate, reported tokens) when the factor is next needed."""


class UsageCalibration:
    """The correction of one session's estimates: the prompt tokens the provider reported ÷ our estimate of the request.

    The last request that was big enough sets the factor (it holds the whole conversation, so it is already the
    average over everything said so far), clamped to ``[minimum, maximum]`` so that one odd report cannot make the
    estimate absurd. Until a report arrives the factor is 1.

    A report can be recorded before its request is counted (``observe_later``): it is counted only when the factor is
    next read, so a run that never needs an exact count never pays for the tokenizer just to learn. Meanwhile
    ``bound_scale`` corrects bounds with the largest factor the pending reports could set.
    """

    def __init__(
        self, *, minimum: float = MIN_FACTOR, maximum: float = MAX_FACTOR, min_sample_tokens: int = MIN_SAMPLE_TOKENS
    ) -> None:
        """Create a calibration with factor 1.

        Args:
            minimum: The smallest factor (0 < minimum ≤ 1).
            maximum: The largest factor (≥ 1).
            min_sample_tokens: Requests estimated below this are not learned from.

        Raises:
            ValueError: The bounds are out of range.
        """
        if not 0 < minimum <= 1 <= maximum or not math.isfinite(maximum):
            raise ValueError(f"Calibration bounds must satisfy 0 < minimum <= 1 <= maximum, not {minimum}, {maximum}.")
        self._minimum = minimum
        self._maximum = maximum
        self._min_sample = max(1, min_sample_tokens)
        self._factor = 1.0
        self._observations = 0
        self._pending: list[Observation] = []

    @property
    def factor(self) -> float:
        """What estimates are multiplied by (pending reports learned first)."""
        self._settle()
        return self._factor

    @property
    def observations(self) -> int:
        """How many reports were learned from (pending reports learned first)."""
        self._settle()
        return self._observations

    @property
    def learned(self) -> int:
        """How many reports were learned from so far, pending ones not learned."""
        return self._observations

    @property
    def pending(self) -> int:
        """How many reports wait for their request to be counted."""
        return len(self._pending)

    @property
    def minimum(self) -> float:
        """The smallest factor."""
        return self._minimum

    @property
    def maximum(self) -> float:
        """The largest factor."""
        return self._maximum

    def observe(self, estimated: int, reported: int) -> None:
        """Learn from one request: ``estimated`` uncorrected tokens that the provider counted as ``reported``."""
        if estimated < self._min_sample or reported <= 0:
            return
        self._factor = min(self._maximum, max(self._minimum, reported / estimated))
        self._observations += 1

    def observe_later(self, observation: Observation) -> None:
        """Record a report whose request is counted only when the factor is next needed (see the class)."""
        self._pending.append(observation)
        del self._pending[:-MAX_PENDING]

    def _settle(self) -> None:
        while self._pending:
            estimated, reported = self._pending.pop(0)()
            self.observe(estimated, reported)

    def scale(self, tokens: int) -> int:
        """Correct an uncorrected estimate (rounded up)."""
        return _scaled(tokens, self.factor)

    def bound_scale(self, tokens: int) -> int:
        """Correct an upper bound so that it stays one: by the factor, or by the largest factor while reports wait
        (learning them would mean counting their requests)."""
        return _scaled(tokens, self._maximum if self._pending else self._factor)


def _scaled(tokens: int, factor: float) -> int:
    return tokens if factor == 1.0 else math.ceil(tokens * factor - 1e-9)


class CalibratedCounter:
    """A counter whose counts are corrected by the session's reported usage.

    Counting a message or a request scales its whole uncorrected count once (see ``count_message``), so caches can
    keep uncorrected counts and stay right when the factor changes.
    """

    def __init__(self, base: TokenCounter, calibration: UsageCalibration | None = None) -> None:
        self._base = base
        self._calibration = calibration if calibration is not None else UsageCalibration()

    @property
    def base(self) -> TokenCounter:
        """The uncorrected counter (a tokenizer or the chars ÷ 4 estimate)."""
        return self._base

    @property
    def calibration(self) -> UsageCalibration:
        """The session's correction."""
        return self._calibration

    def count(self, text: str) -> int:
        """Return the corrected count of ``text``."""
        return self._calibration.scale(self._base.count(text))

    def bound(self, text: str) -> int:
        """Return an upper bound of ``count(text)`` that counts nothing and learns no pending report."""
        return self._calibration.bound_scale(text_bound(self._base, text))


def uncorrected(counter: TokenCounter) -> TokenCounter:
    """The counter under any correction."""
    return counter.base if isinstance(counter, CalibratedCounter) else counter


def correct(counter: TokenCounter, tokens: int) -> int:
    """Apply ``counter``'s correction (if any) to an uncorrected count."""
    return counter.calibration.scale(tokens) if isinstance(counter, CalibratedCounter) else tokens


def correct_bound(counter: TokenCounter, tokens: int) -> int:
    """Apply ``counter``'s correction (if any) to an uncorrected upper bound, so that it stays an upper bound."""
    return counter.calibration.bound_scale(tokens) if isinstance(counter, CalibratedCounter) else tokens


def count_tools(tools: Iterable[ToolSpec], counter: TokenCounter) -> int:
    """Uncorrected estimate of the tool definitions a request sends: name, description and JSON schema of each."""
    return _measure_tools(tools, uncorrected(counter).count)


def bound_tools(tools: Iterable[ToolSpec], counter: TokenCounter) -> int:
    """A cheap upper bound of ``count_tools(tools, counter)``."""
    base = uncorrected(counter)
    return _measure_tools(tools, lambda text: text_bound(base, text))


def _measure_tools(tools: Iterable[ToolSpec], measure: Callable[[str], int]) -> int:
    return sum(
        CALL_OVERHEAD
        + measure(tool.name)
        + measure(tool.description)
        + measure(json.dumps(tool.parameters, separators=(",", ":"), ensure_ascii=False, default=_plain))
        for tool in tools
    )


def _plain(value: object) -> object:
    return dict(value) if isinstance(value, Mapping) else str(value)


def count_message(message: ChatMessage, counter: TokenCounter) -> int:
    """Estimate one message: 4 tokens of overhead plus its texts, calls (+10 each) and results, corrected once.

    Args:
        message: The message.
        counter: The text estimate.

    Returns:
        The message's token estimate.
    """
    return correct(counter, _measure_message(message, uncorrected(counter).count))


def _measure_message(message: ChatMessage, measure: Callable[[str], int]) -> int:
    total = MESSAGE_OVERHEAD
    for part in message.parts:
        if isinstance(part, TextPart | ThinkingPart):
            total += measure(part.text)
        elif isinstance(part, ToolCallPart):
            total += CALL_OVERHEAD + measure(part.name) + measure(part.arguments_text)
        elif isinstance(part, ToolResultPart):
            total += measure(part.result)
    return total


def count_messages(messages: Iterable[ChatMessage], counter: TokenCounter) -> int:
    """Estimate a whole request: the list overhead plus every message.

    Args:
        messages: The request's messages.
        counter: The text estimate.

    Returns:
        The request's token estimate.
    """
    return LIST_OVERHEAD + sum(count_message(message, counter) for message in messages)


class MessageTokenCache:
    """Per-message token counts, keyed by the identity of the (immutable) message.

    The agent loop re-sends the same message objects on every call, so counting each one once makes a request's count
    a sum of dictionary lookups. The cache holds a reference to every message it counted, which keeps its ``id`` from
    being reused by another object while the entry lives; the oldest half is forgotten past ``max_entries``. It also
    answers cheap upper bounds (``bound_all``), which need no tokenizer: a decision that the bound settles never
    counts exactly.
    """

    def __init__(self, counter: TokenCounter = DEFAULT_COUNTER, *, max_entries: int = 65536) -> None:
        if max_entries < 2:
            raise ValueError("max_entries must be at least 2.")
        self._counter = counter
        self._base = uncorrected(counter)
        self._max_entries = max_entries
        # message id → (message, uncorrected tokens, whether exact rather than an upper bound)
        self._entries: dict[int, tuple[ChatMessage, int, bool]] = {}
        # The last tool definitions measured (a turn offers the same ones every round): specs, bound, count.
        self._tools: tuple[tuple[ToolSpec, ...], int, int | None] = ((), 0, 0)

    @property
    def counter(self) -> TokenCounter:
        """The text estimate behind the counts."""
        return self._counter

    def _store(self, message: ChatMessage, tokens: int, exact: bool) -> None:
        if len(self._entries) >= self._max_entries:
            for key in list(self._entries)[: self._max_entries // 2]:
                del self._entries[key]
        self._entries[id(message)] = (message, tokens, exact)

    def _uncorrected(self, message: ChatMessage) -> int:
        entry = self._entries.get(id(message))
        if entry is not None and entry[0] is message and entry[2]:
            return entry[1]
        tokens = _measure_message(message, self._base.count)
        self._store(message, tokens, True)
        return tokens

    def _uncorrected_bound(self, message: ChatMessage) -> int:
        entry = self._entries.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]  # the exact count, when known, is the best bound
        base = self._base
        tokens = _measure_message(message, lambda text: text_bound(base, text))
        self._store(message, tokens, False)
        return tokens

    def count(self, message: ChatMessage) -> int:
        """Return the message's token estimate, counting it only the first time (the correction applies each time)."""
        return correct(self._counter, self._uncorrected(message))

    def count_all(self, messages: Iterable[ChatMessage]) -> int:
        """Return the request estimate of ``messages`` (list overhead included)."""
        count = self.count
        return LIST_OVERHEAD + sum(count(message) for message in messages)

    def count_all_uncorrected(self, messages: Iterable[ChatMessage]) -> int:
        """Return the request estimate of ``messages`` before the session's correction."""
        return LIST_OVERHEAD + sum(self._uncorrected(message) for message in messages)

    def bound(self, message: ChatMessage) -> int:
        """Return an upper bound of ``count(message)`` that loads no tokenizer (the count itself once known)."""
        return correct_bound(self._counter, self._uncorrected_bound(message))

    def bound_all(self, messages: Iterable[ChatMessage]) -> int:
        """Return an upper bound of ``count_all(messages)`` that loads no tokenizer."""
        bound = self.bound
        return LIST_OVERHEAD + sum(bound(message) for message in messages)

    def _measured_tools(self, tools: Sequence[ToolSpec]) -> tuple[tuple[ToolSpec, ...], int, int | None]:
        specs = self._tools[0]
        if len(specs) != len(tools) or any(a is not b for a, b in zip(specs, tools, strict=True)):
            specs = tuple(tools)
            self._tools = specs, bound_tools(specs, self._counter), None
        return self._tools

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        """``count_tools(tools, counter)``, measured once for the same definitions."""
        specs, bound, count = self._measured_tools(tools)
        if count is None:
            count = count_tools(specs, self._counter)
            self._tools = specs, bound, count
        return count

    def bound_tools(self, tools: Sequence[ToolSpec]) -> int:
        """A cheap upper bound of ``count_tools(tools)`` (the count itself once known)."""
        _, bound, count = self._measured_tools(tools)
        return bound if count is None else count


def window_check_count(
    tokens: MessageTokenCache, smallest_window: int | None
) -> Callable[[Iterable[ChatMessage]], int]:
    """A request count for comparing with windows of at least ``smallest_window`` tokens: the cheap bound when it is
    within ``smallest_window`` (every such comparison then comes out as the exact count's would), else the count."""

    def count(messages: Iterable[ChatMessage]) -> int:
        request = tuple(messages)
        if smallest_window is not None:
            bound = tokens.bound_all(request)
            if bound <= smallest_window:
                return bound
        return tokens.count_all(request)

    return count
