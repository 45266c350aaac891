"""The ModelLister port: the models one provider offers, as ``ironhive models`` lists them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypeAlias, runtime_checkable

ModelSource: TypeAlias = Literal["api", "cached", "static"]
"""Where a listed model came from: the provider's API, a model file on this machine, or ironhive's own knowledge
(the built-in catalog or the configuration)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ListedModel:
    """One model a provider offers.

    Attributes:
        model_id: The id to ask the provider for (a local model: its GGUF file's stem).
        provider: The canonical provider name (``openai``, ``google``, ``lmsupply``, ...).
        display_name: A human-readable name, when the provider gives one.
        context_window: Input plus output tokens the model accepts, when known.
        input_price_per_million: USD per million input tokens (list price), when known.
        output_price_per_million: USD per million output tokens (list price), when known.
        source: Where this entry came from.
        is_default: Whether this is the model configured for the provider.
        local_path: The model file, for local models.
        size_bytes: The model file's size, for local models.
    """

    model_id: str
    provider: str
    display_name: str | None = None
    context_window: int | None = None
    input_price_per_million: float | None = None
    output_price_per_million: float | None = None
    source: ModelSource = "api"
    is_default: bool = False
    local_path: Path | None = None
    size_bytes: int | None = None


@runtime_checkable
class ModelLister(Protocol):
    """Asks one provider which models it offers."""

    async def list_models(self) -> list[ListedModel]:
        """The provider's models, as it reports them (no catalog enrichment, no default marking).

        Returns:
            The models; empty when the provider offers none.

        Raises:
            ProviderError: The provider could not be asked or refused (the message never holds the API key).
            ConfigurationError: The lister's settings are unusable (a missing model file, a missing key).
        """
        ...
