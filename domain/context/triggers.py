"""Compaction triggers: the token-based rule (default) and the legacy percentage threshold (inventory §D.9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ironhive.domain.context.config import CompactionConfig


class CompactionTrigger(Protocol):
    """Decides whether a request of ``current`` tokens must be compacted for a window of ``window`` tokens."""

    def should_compact(self, current: int, window: int) -> bool:
        """Return whether to compact."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class TokenTrigger:
    """Compact when free space is under half the protected tail and enough is prunable.

    Attributes:
        protect_recent_tokens: The most recent tokens that are always kept.
        minimum_prune_tokens: Compact only when at least this much lies before the protected tail.
    """

    protect_recent_tokens: int
    minimum_prune_tokens: int

    @classmethod
    def for_window(cls, config: CompactionConfig, window: int) -> TokenTrigger:
        """Build the trigger for ``window``, clamping the config's sizes so small windows still compact.

        The defaults (40000 protected, 20000 minimum) were made for large windows: unclamped, a 4096- or 8192-token
        model would never have 20000 prunable tokens, and would overflow instead of compacting.
        """
        return cls(
            protect_recent_tokens=min(config.protect_recent_tokens, window // 2),
            minimum_prune_tokens=min(config.minimum_prune_tokens, window // 4),
        )

    def prunable(self, current: int) -> int:
        """Tokens before the protected tail (negative when the whole request is protected)."""
        return current - self.protect_recent_tokens

    def should_compact(self, current: int, window: int) -> bool:
        """``(window − current) < protect_recent / 2`` and ``prunable ≥ minimum_prune``."""
        # Doubling both sides keeps the half exact for odd protect_recent values.
        return (
            2 * (window - current) < self.protect_recent_tokens and self.prunable(current) >= self.minimum_prune_tokens
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ThresholdTrigger:
    """The legacy rule: compact once the request fills ``threshold`` of the window.

    Attributes:
        threshold: The share of the window (0.5–1.0).
    """

    threshold: float

    def should_compact(self, current: int, window: int) -> bool:
        """``current / window ≥ threshold``."""
        return current >= self.threshold * window


def trigger_for(config: CompactionConfig, window: int) -> CompactionTrigger:
    """The trigger the config selects, built for ``window``."""
    if config.use_token_based_compaction:
        return TokenTrigger.for_window(config, window)
    return ThresholdTrigger(threshold=config.threshold_percentage)
