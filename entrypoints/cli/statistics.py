"""Session statistics of the interactive mode: requests, tokens and an estimated cost."""

from __future__ import annotations

from dataclasses import dataclass

from ironhive.domain.context.catalog import DEFAULT_CATALOG
from ironhive.ports.chat import Usage

# The original's fallback list prices (USD per million tokens) when the catalog does not know the model.
FALLBACK_INPUT_PRICE = 0.15
FALLBACK_OUTPUT_PRICE = 0.60


@dataclass(kw_only=True, slots=True)
class SessionStatistics:
    """Counts every request of a session, streamed or not."""

    model: str
    local: bool = False
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, usage: Usage) -> None:
        """Count one finished request."""
        self.requests += 1
        self.input_tokens += usage.input_tokens or 0
        self.output_tokens += usage.output_tokens or 0
        self.cached_input_tokens += usage.cached_input_tokens or 0
        self.reasoning_tokens += usage.reasoning_tokens or 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def estimated_cost(self) -> float:
        """List-price estimate in USD; local inference costs nothing."""
        if self.local:
            return 0.0
        info = DEFAULT_CATALOG.lookup(self.model)
        cost = info.cost(self.input_tokens, self.output_tokens) if info else None
        if cost is not None:
            return cost
        return (self.input_tokens * FALLBACK_INPUT_PRICE + self.output_tokens * FALLBACK_OUTPUT_PRICE) / 1_000_000

    def rows(self) -> list[tuple[str, str]]:
        """The table rows: label and value; the cached and reasoning parts only when a provider reported some."""
        average = self.total_tokens // self.requests if self.requests else 0
        input_rows = [("Input Tokens", f"{self.input_tokens:,}")]
        if self.cached_input_tokens:
            input_rows.append(("  Cached", f"{self.cached_input_tokens:,}"))
        output_rows = [("Output Tokens", f"{self.output_tokens:,}")]
        if self.reasoning_tokens:
            output_rows.append(("  Reasoning", f"{self.reasoning_tokens:,}"))
        return [
            ("Requests", str(self.requests)),
            *input_rows,
            *output_rows,
            ("Total Tokens", f"{self.total_tokens:,}"),
            ("Avg per Request", f"{average:,}"),
            ("Est. Cost", f"${self.estimated_cost:.4f}"),
        ]
