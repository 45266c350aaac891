"""ProviderCountCheck: asks the provider's count endpoint for a request only when the estimate is near the trigger."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ironhive.domain.context.tokens import MessageTokenCache, ProviderTokenCounter, UsageCalibration
from ironhive.domain.errors import ProviderError
from ironhive.ports.chat import ChatMessage

CALIBRATED_UNCERTAINTY = 0.15
"""How far a corrected estimate may still be off: ±15 % once the provider has reported a count or usage."""
REPEAT_AFTER_GROWTH = 0.10
"""A request within 10 % of the last one counted is not counted again (the correction from it still holds)."""


class ProviderCountCheck:
    """Makes the compaction decision exact where the estimate cannot: near the trigger.

    When the request would compact at one end of the estimate's uncertainty and not at the other (before any report:
    the correction's whole range; after one: ±15 %), the provider counts it; the count corrects the session's factor
    and the request is counted again. A request far from the trigger, or within 10 % of the last one the provider
    counted, is never sent to the count endpoint, and a failing count leaves the estimate as it was.
    """

    def __init__(
        self,
        counter: ProviderTokenCounter,
        tokens: MessageTokenCache,
        calibration: UsageCalibration,
        *,
        uncertainty: float = CALIBRATED_UNCERTAINTY,
        repeat_after: float = REPEAT_AFTER_GROWTH,
    ) -> None:
        """Create a check.

        Args:
            counter: The provider's count endpoint.
            tokens: The manager's (corrected) message counts.
            calibration: The session's correction the count teaches.
            uncertainty: The relative error of a corrected estimate.
            repeat_after: The relative change of the uncorrected estimate before a request is counted again.
        """
        self._counter = counter
        self._tokens = tokens
        self._calibration = calibration
        self._uncertainty = uncertainty
        self._repeat_after = repeat_after
        self._last_counted: int | None = None
        self.requests_counted = 0
        """How often the provider was asked."""

    def upper(self, tokens: int) -> int:
        """The most the provider could count for a request estimated (or bounded) at ``tokens``, read without
        learning pending reports: the decision ``current`` makes is settled when this much does not compact."""
        calibration = self._calibration
        settled = calibration.pending == 0 and calibration.learned > 0
        high = 1 + self._uncertainty if settled else max(calibration.maximum, 1 + self._uncertainty)
        return math.ceil(tokens * high)

    async def current(self, messages: Sequence[ChatMessage], reserve: int, fires: Callable[[int], bool]) -> int:
        """The corrected count of ``messages``, made exact by the provider first when the decision hangs on it.

        Args:
            messages: The request, as it would be sent.
            reserve: Tokens the request will grow by (the goal reminder).
            fires: Whether a request of so many tokens is compacted.
        """
        current = self._tokens.count_all(messages)
        if self._calibration.observations:
            low, high = 1 - self._uncertainty, 1 + self._uncertainty
        else:
            low, high = self._calibration.minimum, self._calibration.maximum
        if fires(math.floor(current * low) + reserve) == fires(math.ceil(current * high) + reserve):
            return current
        uncorrected = self._tokens.count_all_uncorrected(messages)
        last = self._last_counted
        if last is not None and abs(uncorrected - last) <= self._repeat_after * last:
            return current
        self._last_counted = uncorrected
        self.requests_counted += 1
        try:
            exact = await self._counter.count_input_tokens(messages)
        except ProviderError:
            return current
        self._calibration.observe(uncorrected, exact)
        return self._tokens.count_all(messages)
