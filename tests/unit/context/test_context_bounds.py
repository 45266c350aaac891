"""Cheap upper bounds of token counts: never below the count, and decisions they settle count nothing exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptStep
from ironhive.domain.context.budget import TokenBudgetChatClient
from ironhive.domain.context.calibration import UsageCalibratingChatClient
from ironhive.domain.context.config import CompactionConfig, GoalReminderConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.context.tokens import (
    DEFAULT_COUNTER,
    CalibratedCounter,
    MessageTokenCache,
    UsageCalibration,
    count_messages,
    count_tools,
    text_bound,
    utf8_bound,
    window_check_count,
)
from ironhive.domain.errors import ContextOverflowError
from ironhive.ports.chat import ChatMessage, ChatOptions, JsonValue, Role, ToolSpec, Usage

TEXT = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(list("上下文窗口の文字한국어🙂 \n{}();="))),
    max_size=200,
)


class SpyCounter:
    """Counts like a byte-level BPE tokenizer would at worst (one token a byte) and records every exact count."""

    def __init__(self) -> None:
        self.counted: list[str] = []

    def count(self, text: str) -> int:
        self.counted.append(text)
        return (len(text.encode("utf-8", "surrogatepass")) + 1) // 2

    def bound(self, text: str) -> int:
        return utf8_bound(text)


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_the_estimate_bounds_itself_and_the_utf8_length_bounds_it(text: str) -> None:
    assert text_bound(DEFAULT_COUNTER, text) == DEFAULT_COUNTER.count(text) <= utf8_bound(text)


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(TEXT, min_size=1, max_size=6),
    reports=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 40_000)), max_size=3),
    settle=st.booleans(),
)
def test_a_calibrated_bound_is_never_below_the_calibrated_count(
    texts: list[str], reports: list[tuple[int, int]], settle: bool
) -> None:
    counter = CalibratedCounter(SpyCounter(), UsageCalibration())
    for report in reports:  # learned later: the bound may not know the factor yet
        counter.calibration.observe_later(lambda report=report: report)
    if settle:
        assert counter.calibration.factor > 0  # reading it learns the pending reports: the bound uses the factor
    messages = [ChatMessage.of_text(Role.USER, text) for text in texts]
    bounds = [counter.bound(text) for text in texts]
    request_bound = MessageTokenCache(counter).bound_all(messages)
    assert all(bound >= counter.count(text) for bound, text in zip(bounds, texts, strict=True))
    assert request_bound >= count_messages(messages, counter)


def test_a_bound_reads_no_pending_report_and_uses_the_largest_factor_meanwhile() -> None:
    calibration = UsageCalibration()
    asked: list[int] = []

    def report() -> tuple[int, int]:
        asked.append(1)
        return 1000, 1500

    calibration.observe_later(report)
    assert calibration.bound_scale(100) == 400 and asked == []  # the maximum factor, 4
    assert calibration.factor == 1.5 and asked == [1] and calibration.pending == 0
    assert calibration.bound_scale(100) == 150


async def test_a_request_far_from_the_trigger_is_prepared_without_an_exact_count() -> None:
    spy = SpyCounter()
    config = CompactionConfig(goal_reminder=GoalReminderConfig(enabled=False))
    manager = ContextManager(config, window=128_000, counter=CalibratedCounter(spy))
    history = [ChatMessage.of_text(Role.SYSTEM, "You help." * 300), ChatMessage.of_text(Role.USER, "hi")]
    prepared = await manager.prepare(history)
    assert prepared.report is None and spy.counted == []
    assert prepared.tokens == count_messages(history, CalibratedCounter(SpyCounter()))  # counted when read
    assert spy.counted


async def test_a_request_the_bound_cannot_clear_is_counted_and_decided_exactly() -> None:
    spy = SpyCounter()
    config = CompactionConfig(goal_reminder=GoalReminderConfig(enabled=False))
    manager = ContextManager(config, window=4000, counter=spy)  # trigger: over 3000 tokens
    history = [ChatMessage.of_text(Role.USER, "ab" * 2900)]  # bound 5800 + overheads, exactly 2900 + overheads
    prepared = await manager.prepare(history)
    assert spy.counted and prepared.report is None  # the exact count decided: no compaction
    assert (await manager.prepare([ChatMessage.of_text(Role.USER, "ab" * 3100)])).report is not None


async def test_usage_is_learned_when_a_count_is_next_needed() -> None:
    spy = SpyCounter()
    counter = CalibratedCounter(spy)
    messages = [ChatMessage.of_text(Role.USER, "字" * 400)]  # 1200 bytes, counted 600
    scripted = ScriptedChatClient([ScriptStep(text="ok", usage=Usage(input_tokens=1800, output_tokens=1))])
    await UsageCalibratingChatClient(scripted, counter).get_response(messages, ChatOptions())
    assert spy.counted == [] and counter.calibration.pending == 1
    assert counter.calibration.factor == pytest.approx(1800 / 607)  # the request counted now: 3 + 4 + 600
    assert spy.counted


def test_the_budget_and_the_window_check_count_only_near_their_limit() -> None:
    spy = SpyCounter()
    scripted = ScriptedChatClient([])
    budget = TokenBudgetChatClient(scripted, window=1000, threshold=1.0, counter=spy)
    small, near = [ChatMessage.of_text(Role.USER, "ab" * 100)], [ChatMessage.of_text(Role.USER, "ab" * 800)]
    assert not budget.exceeds_budget(small) and spy.counted == []
    assert not budget.exceeds_budget(near) and spy.counted  # bound 1607 > 1000: counted, 807 fits
    spy.counted.clear()
    check = window_check_count(MessageTokenCache(spy), 1000)
    assert check(small) == 207 and spy.counted == []  # the bound, within every window of the chain
    assert check(near) == 807 and spy.counted


SCHEMA: dict[str, JsonValue] = {"type": "object", "properties": {"path": {"type": "string", "description": "x" * 600}}}
TOOLS = tuple(ToolSpec(name=f"tool_{index}", description="Reads. " * 30, parameters=SCHEMA) for index in range(8))


async def test_the_tool_definitions_take_their_share_of_the_window() -> None:
    config = CompactionConfig(goal_reminder=GoalReminderConfig(enabled=False))
    tools = count_tools(TOOLS, DEFAULT_COUNTER)
    assert 1000 < tools < 2500
    history = [ChatMessage.of_text(Role.SYSTEM, "You help.")]
    for turn in range(12):
        history += [
            ChatMessage.of_text(Role.USER, f"Turn {turn}: " + "w" * 800),
            ChatMessage.of_text(Role.ASSISTANT, "ok"),
        ]
    messages = count_messages(history, DEFAULT_COUNTER)
    assert messages <= 3000 < messages + tools  # the trigger of a 4000-token window is 3000 tokens
    manager = ContextManager(config, window=4000)
    assert (await manager.prepare(history)).report is None  # the messages alone fit
    prepared = await manager.prepare(history, tools=TOOLS)
    assert prepared.report is not None  # with the definitions sent along, the request is over the trigger
    assert prepared.tokens + tools <= 0.7 * 4000  # compacted to the target, definitions included
    budget = TokenBudgetChatClient(ScriptedChatClient([]), window=messages + tools - 1, threshold=1.0)
    assert not budget.exceeds_budget(history) and budget.exceeds_budget(history, TOOLS)
    overflow = ContextOverflowError("too long", window=None)
    after = await ContextManager(config).prepare_after_overflow(history, overflow, tools=TOOLS)
    assert after.tokens + tools <= 0.9 * (messages + tools)  # the learned window counts the definitions too
