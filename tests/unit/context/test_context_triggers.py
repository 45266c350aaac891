"""Compaction triggers: the token-based rule with its small-window clamps, and the legacy threshold."""

from __future__ import annotations

import pytest

from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.triggers import ThresholdTrigger, TokenTrigger, trigger_for

DEFAULTS = CompactionConfig()


@pytest.mark.parametrize(
    ("window", "protect", "minimum"),
    [(200_000, 40_000, 20_000), (80_000, 40_000, 20_000), (65_536, 32_768, 16_384), (8_192, 4_096, 2_048),
     (4_096, 2_048, 1_024)],
)  # fmt: skip
def test_clamps_for_small_windows(window: int, protect: int, minimum: int) -> None:
    trigger = TokenTrigger.for_window(DEFAULTS, window)
    assert (trigger.protect_recent_tokens, trigger.minimum_prune_tokens) == (protect, minimum)


@pytest.mark.parametrize(
    ("window", "current", "fires"),
    [
        (200_000, 150_000, False),  # 50k free ≥ 20k
        (200_000, 180_001, True),  # 19,999 free < 20k, prunable 140k ≥ 20k
        (200_000, 180_000, False),  # exactly 20k free is not less than half of 40k
        (8_192, 6_000, False),  # 2,192 free ≥ 2,048
        (8_192, 6_145, True),  # 2,047 free, prunable 2,049 ≥ 2,048
        (8_192, 9_000, True),  # over the window
        (4_096, 3_073, True),  # 1,023 free < 1,024, prunable 1,025 ≥ 1,024
        (4_096, 3_072, False),
    ],
)
def test_token_trigger_table(window: int, current: int, fires: bool) -> None:
    assert TokenTrigger.for_window(DEFAULTS, window).should_compact(current, window) is fires


def test_the_minimum_prune_rule_holds_back_compaction() -> None:
    trigger = TokenTrigger(protect_recent_tokens=40_000, minimum_prune_tokens=20_000)
    assert trigger.prunable(55_000) == 15_000
    assert not trigger.should_compact(55_000, 60_000)  # 5k free < 20k, but only 15k prunable
    assert trigger.should_compact(60_000, 70_000)


def test_unclamped_defaults_would_never_compact_a_small_window() -> None:
    unclamped = TokenTrigger(protect_recent_tokens=40_000, minimum_prune_tokens=20_000)
    assert not unclamped.should_compact(8_000, 8_192)
    assert TokenTrigger.for_window(DEFAULTS, 8_192).should_compact(8_000, 8_192)


@pytest.mark.parametrize(("current", "fires"), [(91_999, False), (92_000, True), (99_000, True)])
def test_legacy_threshold(current: int, fires: bool) -> None:
    trigger = trigger_for(CompactionConfig(use_token_based_compaction=False), 100_000)
    assert isinstance(trigger, ThresholdTrigger)
    assert trigger.should_compact(current, 100_000) is fires
    assert isinstance(trigger_for(DEFAULTS, 100_000), TokenTrigger)
