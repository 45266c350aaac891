"""ContextManager.prepare and prepare_after_overflow: what is sent, what is kept, and learning the window."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.context.tokens import DEFAULT_COUNTER, count_messages
from ironhive.domain.errors import ContextOverflowError
from ironhive.ports.chat import ChatMessage, Role
from tests.unit.context.context_builders import assistant, exchange, lines, results, system, user


def history(turns: int, result_chars: int = 40_000) -> list[ChatMessage]:
    messages = [system("You are an agent.")]
    for turn in range(turns):
        messages += [user(f"Request {turn}")]
        messages += exchange(f"c{turn}", "shell", lines(result_chars // 40, 40, f"t{turn}"), arguments={"n": turn})
        messages += [assistant(f"Answer {turn}")]
    return messages


async def test_prepare_never_changes_the_callers_messages() -> None:
    messages = history(6)
    snapshot = list(messages)
    prepared = await ContextManager(window=8192).prepare(messages)
    assert messages == snapshot
    assert isinstance(prepared.messages, tuple)
    assert [part.result for m in messages for part in m.tool_results] == results(snapshot)


async def test_an_unknown_window_masks_and_cuts_but_never_compacts() -> None:
    messages = history(6)
    prepared = await ContextManager().prepare(messages)
    assert prepared.window is None and prepared.report is None
    texts = results(prepared.messages)
    assert [text.startswith("[Masked: shell result, 40999 chars") for text in texts] == [True] * 3 + [False] * 3
    assert all("lines omitted" in text for text in texts[3:])
    assert len([m for m in prepared.messages if m.role is Role.USER]) == 7  # six requests and the reminder
    assert prepared.tokens == count_messages(prepared.messages, DEFAULT_COUNTER)


async def test_a_known_window_compacts_pre_emptively() -> None:
    messages = history(12, result_chars=8000)
    manager = ContextManager(CompactionConfig(enable_observation_masking=False), window=8192)
    prepared = await manager.prepare(messages)
    assert prepared.report is not None
    assert prepared.report.tokens_before > 8192 >= prepared.report.tokens_after == prepared.tokens
    assert prepared.report.messages_dropped > 0 and not prepared.report.summary_used
    assert prepared.tokens <= 8192 * 0.7
    assert prepared.messages[-1].text.startswith("[REMINDER] Current goal: Request 11\nOriginal request: Request 0")


async def test_the_configured_window_is_used_when_none_is_given() -> None:
    manager = ContextManager(CompactionConfig(max_context_tokens=4096))
    assert manager.window == manager.effective_window == 4096
    assert (await manager.prepare(history(10, 8000))).tokens <= 4096


async def test_a_small_history_is_not_compacted() -> None:
    prepared = await ContextManager(window=200_000).prepare(history(2, 1000))
    assert prepared.report is None
    assert [m.role for m in prepared.messages][:2] == [Role.SYSTEM, Role.USER]


async def summarise(messages: Sequence[ChatMessage], target_tokens: int) -> str:
    return f"{len(messages)} messages about shell runs (budget {target_tokens})"


async def test_the_summarizer_is_used_when_given() -> None:
    manager = ContextManager(CompactionConfig(enable_observation_masking=False), window=8192, summarizer=summarise)
    prepared = await manager.prepare(history(12, 8000))
    assert prepared.report is not None and prepared.report.summary_used
    summary = prepared.messages[1].text
    assert summary.startswith("[Previous conversation summary]: ")
    budget = int(summary.rsplit("(budget ", 1)[1].rstrip(")"))
    reminder_tokens = DEFAULT_COUNTER.count(prepared.messages[-1].text) + 4
    assert budget == (int(8192 * 0.7) - reminder_tokens) // 4  # a quarter of the target left beside the reminder


async def test_overflow_learns_the_stated_window_and_compacts_for_it() -> None:
    manager = ContextManager()
    messages = history(12, 8000)
    first = await manager.prepare(messages)
    assert first.report is None and first.tokens > 6000
    prepared = await manager.prepare_after_overflow(messages, ContextOverflowError("too long", window=6000))
    assert manager.learned_window == manager.effective_window == 6000
    assert prepared.window == 6000 and prepared.tokens <= 6000 * 0.7
    assert prepared.report is not None
    again = await manager.prepare(messages)
    assert again.tokens <= 6000


async def test_overflow_without_a_stated_window_learns_from_the_overflowing_request() -> None:
    manager = ContextManager()
    messages = history(12, 8000)
    sent = await manager.prepare(messages)
    await manager.prepare_after_overflow(messages, ContextOverflowError("too long"))
    assert manager.learned_window == int(sent.tokens * 0.9)
    # A stated window above what our estimate says overflowed means our estimate undercounts: trust the request.
    undercounting = ContextManager()
    await undercounting.prepare_after_overflow(messages, ContextOverflowError("too long", window=10**6))
    assert undercounting.learned_window == int(sent.tokens * 0.9)


async def test_overflow_handling_can_be_turned_off() -> None:
    error = ContextOverflowError("too long", window=1000)
    manager = ContextManager(CompactionConfig(compact_on_overflow=False))
    with pytest.raises(ContextOverflowError) as raised:
        await manager.prepare_after_overflow(history(3), error)
    assert raised.value is error


async def test_switching_windows_forgets_the_learned_one() -> None:
    manager = ContextManager(window=100_000)
    await manager.prepare_after_overflow(history(4, 8000), ContextOverflowError("x", window=5000))
    assert manager.effective_window == 5000
    manager.window = 32_000
    assert manager.learned_window is None and manager.effective_window == 32_000
    other = manager.with_window(16_000)
    assert other.window == 16_000 and other.config is manager.config and manager.window == 32_000
    with pytest.raises(ValueError, match="positive"):
        manager.window = 0


async def test_earlier_reminders_are_replaced_not_piled_up() -> None:
    manager = ContextManager(window=200_000)
    prepared = await manager.prepare(history(4, 1000))
    again = await manager.prepare([*prepared.messages, user("Next request")])
    reminders = [m.text for m in again.messages if m.text.startswith("[REMINDER]")]
    assert reminders == ["[REMINDER] Current goal: Next request\nOriginal request: Request 0"]


async def test_placeholders_describe_the_real_result_not_its_cut() -> None:
    prepared = await ContextManager().prepare(history(5))
    masked = results(prepared.messages)[0]
    assert len(results(history(5))[0]) == 40999
    assert masked.startswith('[Masked: shell result, 40999 chars, ~1000 lines — arguments: {"n": 0}.')


async def test_masking_and_cutting_can_be_turned_off() -> None:
    config = CompactionConfig(enable_observation_masking=False, enable_tool_result_compaction=False)
    messages = history(5)
    prepared = await ContextManager(config).prepare(messages)
    assert results(prepared.messages) == results(messages)


async def test_a_cut_user_message_is_reported_with_the_characters_it_lost() -> None:
    pasted = "HEAD " + "p" * 60_000 + " TAIL"
    prepared = await ContextManager(window=8192).prepare([system("You are an agent."), user(pasted)])
    report = prepared.report
    assert report is not None
    assert (report.messages_dropped, report.messages_summarized) == (0, 0)  # nothing left out whole ...
    sent = prepared.messages[-1].text
    assert report.parts_cut == 1 and report.chars_cut == len(pasted) - len(sent) > 0  # ... but the request was cut
