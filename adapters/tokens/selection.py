"""Which tokenizer counts a provider's model: tiktoken's encoding where one is known, else chars ÷ 4."""

from __future__ import annotations

from ironhive.adapters.tokens.tiktoken_counter import TiktokenCounter, is_shipped
from ironhive.domain.context.tokens import DEFAULT_COUNTER, TokenCounter

OPENAI_MODEL_PROVIDERS = frozenset({"openai", "azure"})
"""Providers that serve OpenAI's own models: an unknown model name there is a newer OpenAI model (o200k_base)."""

CURRENT_OPENAI_ENCODING = "o200k_base"

OPENAI_NAME_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt-", "codex-", "text-", "ft:gpt-")
"""How the names in tiktoken's model table start: other names are not looked up, so tiktoken is not even imported
for a Claude, Gemini or scripted model."""


def encoding_for_model(model: str) -> str | None:
    """tiktoken's encoding of ``model`` (a ``vendor/`` prefix ignored), or ``None`` when tiktoken does not know it.

    Only tiktoken's model table is read (no download); models of encodings ironhive does not ship count as unknown.
    """
    name = model.rsplit("/", 1)[-1].strip()
    if not name.lower().startswith(OPENAI_NAME_PREFIXES):
        return None
    from tiktoken.model import encoding_name_for_model

    try:
        encoding = encoding_name_for_model(name)
    except KeyError:
        return None
    return encoding if is_shipped(encoding) else None


def counter_for(provider: str | None, model: str | None) -> TokenCounter:
    """The text counter of a remote model: its tiktoken encoding, OpenAI's current one for an unknown model of an
    OpenAI provider, else the chars ÷ 4 estimate (the usage the provider reports corrects each of them per session).

    Args:
        provider: The canonical provider name (``None`` when unknown).
        model: The model name (``None`` when unknown).
    """
    encoding = encoding_for_model(model) if model else None
    if encoding is None and provider in OPENAI_MODEL_PROVIDERS:
        encoding = CURRENT_OPENAI_ENCODING
    return TiktokenCounter(encoding) if encoding is not None else DEFAULT_COUNTER
