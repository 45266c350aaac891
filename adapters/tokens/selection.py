"""Which tokenizer counts a provider's model: tiktoken's encoding where one is known, else chars ÷ 4."""

from __future__ import annotations

from ironhive.adapters.tokens.tiktoken_counter import TiktokenCounter, is_shipped
from ironhive.domain.context.tokens import DEFAULT_COUNTER, TokenCounter, utf8_bound

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


class ModelTokenCounter:
    """Counts in the encoding of a model name, looked up in tiktoken's table on the first count, so choosing the
    counter imports nothing; a name the table does not know counts in ``default`` (an encoding, or chars ÷ 4 when
    ``None``). Its bound needs no lookup: the UTF-8 length bounds every encoding and chars ÷ 4 alike."""

    def __init__(self, model: str, default: str | None) -> None:
        self._model = model
        self._default = default
        self._counter: TokenCounter | None = None

    @property
    def counter(self) -> TokenCounter:
        """The counter the model's name selects (looked up now if not yet)."""
        if self._counter is None:
            encoding = encoding_for_model(self._model) or self._default
            self._counter = TiktokenCounter(encoding) if encoding is not None else DEFAULT_COUNTER
        return self._counter

    @property
    def encoding_name(self) -> str | None:
        """The encoding counted in, ``None`` for chars ÷ 4."""
        counter = self.counter
        return counter.encoding_name if isinstance(counter, TiktokenCounter) else None

    def count(self, text: str) -> int:
        """Return the number of tokens of ``text``."""
        return self.counter.count(text)

    def bound(self, text: str) -> int:
        """An upper bound of ``count(text)`` that looks nothing up and loads no encoding."""
        return utf8_bound(text)


def counter_for(provider: str | None, model: str | None) -> TokenCounter:
    """The text counter of a remote model: its tiktoken encoding, OpenAI's current one for an unknown model of an
    OpenAI provider, else the chars ÷ 4 estimate (the usage the provider reports corrects each of them per session).

    Only the name is looked at here; tiktoken is imported on the first exact count (see ``ModelTokenCounter``).

    Args:
        provider: The canonical provider name (``None`` when unknown).
        model: The model name (``None`` when unknown).
    """
    default = CURRENT_OPENAI_ENCODING if provider in OPENAI_MODEL_PROVIDERS else None
    name = (model or "").rsplit("/", 1)[-1].strip()
    if name.lower().startswith(OPENAI_NAME_PREFIXES):
        return ModelTokenCounter(name, default)
    return TiktokenCounter(default) if default is not None else DEFAULT_COUNTER
