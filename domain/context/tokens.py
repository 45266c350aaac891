"""Token estimation: the TokenCounter protocol, the chars ÷ 4 estimate and message counting with overheads."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from ironhive.ports.chat import ChatMessage, TextPart, ThinkingPart, ToolCallPart, ToolResultPart

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


class CharEstimateCounter:
    """The default estimate: characters ÷ 4, rounded up (conservative for English and code)."""

    def count(self, text: str) -> int:
        """Return ``ceil(len(text) / 4)``."""
        return (len(text) + 3) // 4


DEFAULT_COUNTER = CharEstimateCounter()


def count_message(message: ChatMessage, counter: TokenCounter) -> int:
    """Estimate one message: 4 tokens of overhead plus its texts, calls (+10 each) and results.

    Args:
        message: The message.
        counter: The text estimate.

    Returns:
        The message's token estimate.
    """
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
        self._max_entries = max_entries
        self._entries: dict[int, tuple[ChatMessage, int]] = {}

    @property
    def counter(self) -> TokenCounter:
        """The text estimate behind the counts."""
        return self._counter

    def count(self, message: ChatMessage) -> int:
        """Return the message's token estimate, counting it only the first time."""
        entry = self._entries.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        tokens = count_message(message, self._counter)
        if len(self._entries) >= self._max_entries:
            for key in list(self._entries)[: self._max_entries // 2]:
                del self._entries[key]
        self._entries[id(message)] = (message, tokens)
        return tokens

    def count_all(self, messages: Iterable[ChatMessage]) -> int:
        """Return the request estimate of ``messages`` (list overhead included)."""
        count = self.count
        return LIST_OVERHEAD + sum(count(message) for message in messages)
