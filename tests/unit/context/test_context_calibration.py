"""The per-session token correction: reported prompt tokens ÷ our estimate, bounded, applied to every later count."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptStep
from ironhive.domain.context.budget import TokenBudgetChatClient
from ironhive.domain.context.calibration import UsageCalibratingChatClient
from ironhive.domain.context.config import CompactionConfig, GoalReminderConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.context.tokens import (
    DEFAULT_COUNTER,
    LIST_OVERHEAD,
    CalibratedCounter,
    MessageTokenCache,
    UsageCalibration,
    count_message,
    count_messages,
    count_tools,
)
from ironhive.ports.chat import ChatMessage, ChatOptions, Role, ToolSpec, Usage


def test_the_factor_starts_at_one_and_follows_the_last_big_enough_report() -> None:
    calibration = UsageCalibration()
    assert calibration.factor == 1.0 and calibration.scale(1000) == 1000
    calibration.observe(1000, 2500)
    assert calibration.factor == 2.5 and calibration.scale(1000) == 2500 and calibration.observations == 1
    calibration.observe(2000, 1800)
    assert calibration.factor == pytest.approx(0.9)
    calibration.observe(50, 400)  # too small a request: fixed overheads would dominate it
    calibration.observe(1000, 0)  # a report of nothing is no report
    assert calibration.factor == pytest.approx(0.9) and calibration.observations == 2


@given(
    estimated=st.integers(min_value=0, max_value=10**7),
    reported=st.integers(min_value=-10, max_value=10**8),
    tokens=st.integers(min_value=0, max_value=10**7),
)
def test_the_factor_stays_within_its_bounds_and_scaling_rounds_up(estimated: int, reported: int, tokens: int) -> None:
    calibration = UsageCalibration(minimum=0.5, maximum=4.0)
    calibration.observe(estimated, reported)
    assert 0.5 <= calibration.factor <= 4.0
    scaled = calibration.scale(tokens)
    assert scaled >= tokens * calibration.factor - 1e-6
    assert scaled <= math.ceil(tokens * calibration.factor) + 1
    if estimated >= 100 and reported > 0:
        assert calibration.factor == min(4.0, max(0.5, reported / estimated))


@pytest.mark.parametrize(("minimum", "maximum"), [(0, 2), (1.5, 2), (0.5, 0.9), (0.5, math.inf)])
def test_bounds_that_cannot_hold_one_are_refused(minimum: float, maximum: float) -> None:
    with pytest.raises(ValueError, match="bounds"):
        UsageCalibration(minimum=minimum, maximum=maximum)


def test_cached_counts_follow_a_factor_learned_after_they_were_counted() -> None:
    counter = CalibratedCounter(DEFAULT_COUNTER)
    cache = MessageTokenCache(counter)
    message = ChatMessage.of_text(Role.USER, "x" * 400)
    assert cache.count(message) == 104 == count_message(message, counter)
    counter.calibration.observe(1000, 3000)
    assert cache.count(message) == 312 == count_message(message, counter)
    assert cache.count_all([message]) == LIST_OVERHEAD + 312 == count_messages([message], counter)


def _options(*tools: ToolSpec) -> ChatOptions:
    return ChatOptions(tools=tools)


TOOL = ToolSpec(name="read_file", description="Read a file.", parameters={"type": "object", "properties": {}})


@pytest.mark.parametrize("streaming", [False, True])
async def test_reported_prompt_tokens_set_the_factor_for_later_requests(streaming: bool) -> None:
    messages = [ChatMessage.of_text(Role.USER, "字" * 800)]  # 200 by chars ÷ 4; a real tokenizer says ~800
    reported = 3 * count_messages(messages, DEFAULT_COUNTER) + count_tools([TOOL], DEFAULT_COUNTER)
    scripted = ScriptedChatClient([ScriptStep(text="ok", usage=Usage(input_tokens=reported, output_tokens=1))])
    counter = CalibratedCounter(DEFAULT_COUNTER)
    client = UsageCalibratingChatClient(scripted, counter)
    if streaming:
        updates = [update async for update in client.get_streaming_response(messages, _options(TOOL))]
        assert updates[-1].usage is not None
    else:
        await client.get_response(messages, _options(TOOL))
    assert counter.calibration.factor == pytest.approx(3.0)
    assert count_messages(messages, counter) == LIST_OVERHEAD + 3 * count_message(messages[0], DEFAULT_COUNTER)


async def test_a_response_without_usage_teaches_nothing() -> None:
    counter = CalibratedCounter(DEFAULT_COUNTER)
    client = UsageCalibratingChatClient(ScriptedChatClient([ScriptStep(text="ok")]), counter)
    await client.get_response([ChatMessage.of_text(Role.USER, "x" * 4000)], _options())
    assert counter.calibration.factor == 1.0 and counter.calibration.observations == 0


async def test_compaction_starts_at_the_request_the_corrected_count_puts_over_the_trigger() -> None:
    window = 4000  # token trigger: compact once a request exceeds 3000 tokens
    counter = CalibratedCounter(DEFAULT_COUNTER)
    config = CompactionConfig(goal_reminder=GoalReminderConfig(enabled=False))  # no reserve: the trigger alone
    manager = ContextManager(config, window=window, counter=counter)
    history = [ChatMessage.of_text(Role.SYSTEM, "You help.")]
    turns: list[int] = []
    for turn in range(6):
        history += [
            ChatMessage.of_text(Role.USER, f"Part {turn}: " + "字" * 1600),
            ChatMessage.of_text(Role.ASSISTANT, "ok"),
        ]
        turns.append(len(history))
    # Uncorrected, 1600 CJK characters count 400 tokens: six turns (~2500) never reach the trigger.
    assert (await manager.prepare(history)).report is None
    # The provider reports three times our estimate: the same history is now ~7500 tokens and is compacted.
    counter.calibration.observe(1000, 3000)
    for length in turns:
        prepared = await manager.prepare(history[:length])
        corrected = count_messages(history[:length], counter)
        assert (prepared.report is not None) == (corrected > 3000), length
        assert prepared.tokens <= window


async def test_the_budget_refuses_by_the_corrected_count() -> None:
    counter = CalibratedCounter(DEFAULT_COUNTER)
    scripted = ScriptedChatClient([ScriptStep(text="sent"), ScriptStep(text="sent")])
    budget = TokenBudgetChatClient(scripted, window=1000, threshold=1.0, counter=counter)
    messages = [ChatMessage.of_text(Role.USER, "字" * 2000)]  # 500 uncorrected
    assert not budget.exceeds_budget(messages)
    counter.calibration.observe(500, 1500)
    assert budget.exceeds_budget(messages)
    assert (await budget.get_response(messages, _options())).finish_reason == "length"
