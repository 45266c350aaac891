"""Token estimation: chars ÷ 4 rounded up, message overheads (§D.8) and the per-message cache."""

from __future__ import annotations

import pytest

from ironhive.domain.context.tokens import DEFAULT_COUNTER, MessageTokenCache, count_message, count_messages
from ironhive.domain.tool_calls import make_tool_call
from ironhive.ports.chat import ChatMessage, Role, TextPart, ThinkingPart, ToolResultPart


@pytest.mark.parametrize(("text", "tokens"), [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100)])
def test_the_default_estimate_is_chars_over_four_rounded_up(text: str, tokens: int) -> None:
    assert DEFAULT_COUNTER.count(text) == tokens


def test_messages_carry_their_overheads() -> None:
    call = make_tool_call("c1", "read_file", '{"path": "a.py"}')  # name 9 chars → 3, arguments 16 chars → 4
    assert count_message(ChatMessage.of_text(Role.USER, "x" * 8), DEFAULT_COUNTER) == 4 + 2
    assert count_message(ChatMessage(role=Role.ASSISTANT, parts=(call,)), DEFAULT_COUNTER) == 4 + 10 + 3 + 4
    result = ToolResultPart(call_id="c1", name="read_file", result="y" * 40, success=True)
    assert count_message(ChatMessage(role=Role.TOOL, parts=(result,)), DEFAULT_COUNTER) == 4 + 10
    both = ChatMessage(role=Role.ASSISTANT, parts=(ThinkingPart(text="t" * 4), TextPart(text="u" * 4)))
    assert count_message(both, DEFAULT_COUNTER) == 4 + 1 + 1
    messages = [ChatMessage.of_text(Role.USER, "x" * 8), both]
    assert count_messages(messages, DEFAULT_COUNTER) == 3 + 6 + 6


class CountingCounter:
    def __init__(self) -> None:
        self.calls = 0

    def count(self, text: str) -> int:
        self.calls += 1
        return len(text)


def test_the_cache_counts_each_message_object_once() -> None:
    counter = CountingCounter()
    cache = MessageTokenCache(counter)
    message = ChatMessage.of_text(Role.USER, "hello")
    equal_but_new = ChatMessage.of_text(Role.USER, "hello")
    assert cache.count(message) == cache.count(message) == 9
    assert counter.calls == 1
    assert cache.count(equal_but_new) == 9
    assert counter.calls == 2
    assert cache.count_all([message, equal_but_new]) == 3 + 18


def test_the_cache_forgets_its_oldest_half_when_full() -> None:
    counter = CountingCounter()
    cache = MessageTokenCache(counter, max_entries=4)
    messages = [ChatMessage.of_text(Role.USER, str(index)) for index in range(5)]
    for message in messages:
        cache.count(message)
    assert counter.calls == 5
    cache.count(messages[4])
    assert counter.calls == 5
    cache.count(messages[0])
    assert counter.calls == 6
