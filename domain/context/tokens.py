"""Token counting: the TokenCounter protocol, chars ÷ 4, the per-session correction from usage, message overheads."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
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


DEFAULT_COUNTER = CharEstimateCounter()

MIN_FACTOR = 0.5
"""The smallest correction: reported usage can at most halve an estimate."""
MAX_FACTOR = 4.0
"""The largest correction: chars ÷ 4 on CJK text undercounts about fourfold, nothing sane more."""
MIN_SAMPLE_TOKENS = 100
"""Requests estimated below this teach nothing: fixed overheads the estimate cannot see dominate them."""


class UsageCalibration:
    """The correction of one session's estimates: the prompt tokens the provider reported ÷ our estimate of the request.

    The last request that was big enough sets the factor (it holds the whole conversation, so it is already the
    average over everything said so far), clamped to ``[minimum, maximum]`` so that one odd report cannot make the
    estimate absurd. Until a report arrives the factor is 1.
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

    @property
    def factor(self) -> float:
        """What estimates are multiplied by."""
        return self._factor

    @property
    def observations(self) -> int:
        """How many reports were learned from."""
        return self._observations

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

    def scale(self, tokens: int) -> int:
        """Correct an uncorrected estimate (rounded up)."""
        if self._factor == 1.0:
            return tokens
        return math.ceil(tokens * self._factor - 1e-9)


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


def uncorrected(counter: TokenCounter) -> TokenCounter:
    """The counter under any correction."""
    return counter.base if isinstance(counter, CalibratedCounter) else counter


def correct(counter: TokenCounter, tokens: int) -> int:
    """Apply ``counter``'s correction (if any) to an uncorrected count."""
    return counter.calibration.scale(tokens) if isinstance(counter, CalibratedCounter) else tokens


def count_tools(tools: Iterable[ToolSpec], counter: TokenCounter) -> int:
    """Uncorrected estimate of the tool definitions a request sends: name, description and JSON schema of each."""
    base = uncorrected(counter)
    return sum(
        CALL_OVERHEAD
        + base.count(tool.name)
        + base.count(tool.description)
        + base.count(json.dumps(tool.parameters, separators=(",", ":"), ensure_ascii=False, default=_plain))
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
    return correct(counter, _count_message(message, uncorrected(counter)))


def _count_message(message: ChatMessage, counter: TokenCounter) -> int:
    total = MESSAGE_OVERHEAD
    for part in message.parts:
        if isinstance(part, TextPart | ThinkingPart):
            total += counter.count(part.text)
        elif isinstance(part, ToolCallPart):
            total += CALL_OVERHEAD + counter.count(part.name) + counter.count(part.arguments_text)
        elif isinstance(part, ToolResultPart):
            total += counter.count(part.result)
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
    being reused by another object while the entry lives; the oldest half is forgotten past ``max_entries``.
    """

    def __init__(self, counter: TokenCounter = DEFAULT_COUNTER, *, max_entries: int = 65536) -> None:
        if max_entries < 2:
            raise ValueError("max_entries must be at least 2.")
        self._counter = counter
        self._base = uncorrected(counter)
        self._max_entries = max_entries
        self._entries: dict[int, tuple[ChatMessage, int]] = {}

    @property
    def counter(self) -> TokenCounter:
        """The text estimate behind the counts."""
        return self._counter

    def count(self, message: ChatMessage) -> int:
        """Return the message's token estimate, counting it only the first time (the correction applies each time)."""
        entry = self._entries.get(id(message))
        if entry is not None and entry[0] is message:
            return correct(self._counter, entry[1])
        tokens = _count_message(message, self._base)
        if len(self._entries) >= self._max_entries:
            for key in list(self._entries)[: self._max_entries // 2]:
                del self._entries[key]
        self._entries[id(message)] = (message, tokens)
        return correct(self._counter, tokens)

    def count_all(self, messages: Iterable[ChatMessage]) -> int:
        """Return the request estimate of ``messages`` (list overhead included)."""
        count = self.count
        return LIST_OVERHEAD + sum(count(message) for message in messages)

    def count_all_uncorrected(self, messages: Iterable[ChatMessage]) -> int:
        """Return the request estimate of ``messages`` before the session's correction."""
        total = LIST_OVERHEAD
        for message in messages:
            entry = self._entries.get(id(message))
            total += entry[1] if entry is not None and entry[0] is message else _count_message(message, self._base)
        return total
