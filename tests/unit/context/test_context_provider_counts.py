"""The provider's count endpoint is asked only where the estimate cannot decide: near the compaction trigger, not on
every round; its count corrects the session and decides; a failing count leaves the estimate."""

from __future__ import annotations

from collections.abc import Sequence

from ironhive.domain.context.config import CompactionConfig, GoalReminderConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.context.tokens import DEFAULT_COUNTER, CalibratedCounter, count_messages
from ironhive.domain.errors import ProviderError
from ironhive.ports.chat import ChatMessage, Role

WINDOW = 4000  # the token trigger compacts a request over 3000 tokens
CONFIG = CompactionConfig(goal_reminder=GoalReminderConfig(enabled=False))


class ThreeTimesCounter:
    """A provider whose tokenizer counts three times the chars ÷ 4 estimate (CJK text); records what it counted."""

    def __init__(self, *, fail: bool = False) -> None:
        self.counted: list[int] = []
        self._fail = fail

    async def count_input_tokens(self, messages: Sequence[ChatMessage]) -> int:
        self.counted.append(len(messages))
        if self._fail:
            raise ProviderError("count endpoint down", status=503, retryable=True)
        return 3 * count_messages(messages, DEFAULT_COUNTER)


def conversation(turns: int, chars: int) -> list[ChatMessage]:
    history = [ChatMessage.of_text(Role.SYSTEM, "You help.")]
    for turn in range(turns):
        history.append(ChatMessage.of_text(Role.USER, f"Part {turn}: " + "字" * chars))
        history.append(ChatMessage.of_text(Role.ASSISTANT, "ok"))
    return history


async def test_small_requests_are_never_counted_by_the_provider() -> None:
    provider = ThreeTimesCounter()
    manager = ContextManager(
        CONFIG, window=WINDOW, counter=CalibratedCounter(DEFAULT_COUNTER), provider_counter=provider
    )
    for turns in range(1, 6):
        await manager.prepare(conversation(turns, 40))  # even at 4× no request reaches the trigger
    assert provider.counted == []


async def test_the_first_request_near_the_trigger_is_counted_and_compacted_by_the_exact_count() -> None:
    provider = ThreeTimesCounter()
    counter = CalibratedCounter(DEFAULT_COUNTER)
    manager = ContextManager(CONFIG, window=WINDOW, counter=counter, provider_counter=provider)
    history = conversation(4, 1600)  # ~1650 by chars ÷ 4, ~4900 counted: over the trigger only by the real count
    prepared = await manager.prepare(history)
    assert len(provider.counted) == 1
    assert counter.calibration.factor == 3.0
    assert prepared.report is not None and prepared.tokens <= WINDOW


async def test_a_conversation_growing_near_the_trigger_is_not_counted_every_round() -> None:
    provider = ThreeTimesCounter()
    counter = CalibratedCounter(DEFAULT_COUNTER)
    manager = ContextManager(CONFIG, window=WINDOW, counter=counter, provider_counter=provider)
    real_counts, compacted = [], []
    for turns in range(1, 41):
        history = conversation(turns, 100)  # each turn adds ~37 estimated, ~111 real tokens
        compacted.append((await manager.prepare(history)).report is not None)
        real_counts.append(3 * count_messages(history, DEFAULT_COUNTER))
    assert 1 <= len(provider.counted) <= 6  # 40 rounds, a handful of counts
    assert manager.provider_counts == len(provider.counted)
    # Compaction starts at the first request the real count puts over the trigger, not before, not after.
    first_over = next(index for index, real in enumerate(real_counts) if real > 3000)
    assert compacted.index(True) == first_over


async def test_a_failing_count_leaves_the_estimate_and_the_turn_goes_on() -> None:
    provider = ThreeTimesCounter(fail=True)
    counter = CalibratedCounter(DEFAULT_COUNTER)
    manager = ContextManager(CONFIG, window=WINDOW, counter=counter, provider_counter=provider)
    prepared = await manager.prepare(conversation(4, 1600))
    assert len(provider.counted) == 1 and counter.calibration.factor == 1.0
    assert prepared.report is None  # by the estimate it fits


async def test_without_a_corrected_counter_the_endpoint_is_not_used() -> None:
    provider = ThreeTimesCounter()
    manager = ContextManager(CONFIG, window=WINDOW, counter=DEFAULT_COUNTER, provider_counter=provider)
    await manager.prepare(conversation(4, 1600))
    assert provider.counted == [] and manager.provider_counts == 0
