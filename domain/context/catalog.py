"""ModelCatalog: context windows and list prices of well-known models, and the window resolution order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ironhive.ports.chat import ChatClient, ContextSizeProvider


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelInfo:
    """What the catalog knows about one model family.

    Attributes:
        context_window: Input plus output tokens the model accepts.
        input_price: USD per million input tokens (list price, uncached), when known.
        output_price: USD per million output tokens, when known.
    """

    context_window: int
    input_price: float | None = None
    output_price: float | None = None

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """Estimate the list-price cost in USD of a call, or ``None`` when a price is unknown."""
        if self.input_price is None or self.output_price is None:
            return None
        return (input_tokens * self.input_price + output_tokens * self.output_price) / 1_000_000


def _m(window: int, input_price: float | None = None, output_price: float | None = None) -> ModelInfo:
    return ModelInfo(context_window=window, input_price=input_price, output_price=output_price)


# List prices (USD / 1M tokens) as published in 2025; they drift, so they serve estimates only. Keys are prefixes:
# "gpt-4o" also answers "gpt-4o-2024-08-06"; the longest matching key wins ("gpt-4o-mini" beats "gpt-4o").
BUILTIN_MODELS: Mapping[str, ModelInfo] = {
    # OpenAI
    "gpt-5": _m(400_000, 1.25, 10.0),
    "gpt-5-mini": _m(400_000, 0.25, 2.0),
    "gpt-5-nano": _m(400_000, 0.05, 0.40),
    "gpt-5.1": _m(400_000, 1.25, 10.0),
    "gpt-4.1": _m(1_047_576, 2.0, 8.0),
    "gpt-4.1-mini": _m(1_047_576, 0.40, 1.60),
    "gpt-4.1-nano": _m(1_047_576, 0.10, 0.40),
    "gpt-4o": _m(128_000, 2.50, 10.0),
    "gpt-4o-mini": _m(128_000, 0.15, 0.60),
    "chatgpt-4o-latest": _m(128_000, 5.0, 15.0),
    "gpt-4-turbo": _m(128_000, 10.0, 30.0),
    "gpt-4-32k": _m(32_768, 60.0, 120.0),
    "gpt-4": _m(8_192, 30.0, 60.0),
    "gpt-3.5-turbo": _m(16_385, 0.50, 1.50),
    "o1": _m(200_000, 15.0, 60.0),
    "o1-preview": _m(128_000, 15.0, 60.0),
    "o1-mini": _m(128_000, 1.10, 4.40),
    "o1-pro": _m(200_000, 150.0, 600.0),
    "o3": _m(200_000, 2.0, 8.0),
    "o3-mini": _m(200_000, 1.10, 4.40),
    "o3-pro": _m(200_000, 20.0, 80.0),
    "o4-mini": _m(200_000, 1.10, 4.40),
    # Anthropic
    "claude-opus-4-5": _m(200_000, 5.0, 25.0),
    "claude-opus-4-1": _m(200_000, 15.0, 75.0),
    "claude-opus-4": _m(200_000, 15.0, 75.0),
    "claude-sonnet-4-5": _m(200_000, 3.0, 15.0),
    "claude-sonnet-4": _m(200_000, 3.0, 15.0),
    "claude-haiku-4-5": _m(200_000, 1.0, 5.0),
    "claude-3-7-sonnet": _m(200_000, 3.0, 15.0),
    "claude-3-5-sonnet": _m(200_000, 3.0, 15.0),
    "claude-3-5-haiku": _m(200_000, 0.80, 4.0),
    "claude-3-opus": _m(200_000, 15.0, 75.0),
    "claude-3-sonnet": _m(200_000, 3.0, 15.0),
    "claude-3-haiku": _m(200_000, 0.25, 1.25),
    # Google Gemini (prices of prompts up to 200k tokens)
    "gemini-3-pro": _m(1_048_576, 2.0, 12.0),
    "gemini-2.5-pro": _m(1_048_576, 1.25, 10.0),
    "gemini-2.5-flash": _m(1_048_576, 0.30, 2.50),
    "gemini-2.5-flash-lite": _m(1_048_576, 0.10, 0.40),
    "gemini-2.0-flash": _m(1_048_576, 0.10, 0.40),
    "gemini-2.0-flash-lite": _m(1_048_576, 0.075, 0.30),
    "gemini-1.5-pro": _m(2_097_152, 1.25, 5.0),
    "gemini-1.5-flash": _m(1_048_576, 0.075, 0.30),
    # xAI
    "grok-4": _m(256_000, 3.0, 15.0),
    "grok-4-fast": _m(2_000_000, 0.20, 0.50),
    "grok-4-1-fast": _m(2_000_000, 0.20, 0.50),
    "grok-code-fast-1": _m(256_000, 0.20, 1.50),
    "grok-3": _m(131_072, 3.0, 15.0),
    "grok-3-mini": _m(131_072, 0.30, 0.50),
    "grok-2": _m(131_072, 2.0, 10.0),
    "grok-2-vision": _m(32_768, 2.0, 10.0),
}

# What may follow a prefix: a dated or tagged variant ("-2024-08-06", ":free", "@20240620"), never a different model
# ("gpt-4o" is not a "gpt-4" variant, nor "gpt-4.5" one).
_VARIANT_SEPARATORS = "-:@"


class ModelCatalog:
    """Looks models up by name, dated and provider-prefixed variants included."""

    def __init__(self, models: Mapping[str, ModelInfo] | None = None) -> None:
        """Create a catalog.

        Args:
            models: Model name prefixes and their info; ``None`` uses the built-in table.
        """
        self._models = {name.lower(): info for name, info in (BUILTIN_MODELS if models is None else models).items()}
        self._by_length = sorted(self._models, key=len, reverse=True)
        self._found: dict[str, ModelInfo | None] = {}

    def with_models(self, models: Mapping[str, ModelInfo]) -> ModelCatalog:
        """Return a catalog with ``models`` added (replacing entries of the same name)."""
        return ModelCatalog({**self._models, **{name.lower(): info for name, info in models.items()}})

    def lookup(self, model: str) -> ModelInfo | None:
        """Find a model: the longest known prefix of its name (after any "provider/" part), case-insensitive."""
        if model in self._found:
            return self._found[model]
        name = model.strip().lower().rsplit("/", 1)[-1]
        found: ModelInfo | None = None
        for prefix in self._by_length:
            if name.startswith(prefix) and (len(name) == len(prefix) or name[len(prefix)] in _VARIANT_SEPARATORS):
                found = self._models[prefix]
                break
        self._found[model] = found
        return found

    def context_window(self, model: str) -> int | None:
        """The model's window, or ``None`` when the catalog does not know it."""
        info = self.lookup(model)
        return None if info is None else info.context_window


DEFAULT_CATALOG = ModelCatalog()


def context_window(
    model: str | None,
    *,
    configured: int | None = None,
    client: ChatClient | None = None,
    catalog: ModelCatalog = DEFAULT_CATALOG,
) -> int | None:
    """Resolve the context window to compact for.

    Order: the configured window (``compaction.maxContextTokens``) wins; then a chat client that knows its own window
    (a local model's ``n_ctx``, already capped by its trained context by the adapter); then the catalog; else ``None``.
    Unknown stays unknown: guessing 4096 or 8192 for a remote model would compact a 200k-window conversation for no
    reason, or let a small model overflow; the caller compacts on the provider's overflow error instead.

    Args:
        model: The active model's name, when known.
        configured: ``compaction.maxContextTokens``.
        client: The chat client in use.
        catalog: Where to look the model up.

    Returns:
        The window in tokens, or ``None`` when unknown.
    """
    if configured is not None:
        return configured
    if client is not None and isinstance(client, ContextSizeProvider):
        return client.context_size
    if model:
        return catalog.context_window(model)
    return None
