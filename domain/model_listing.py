"""Model listing: each provider's models from its API, enriched from the catalog, with the static fall-back.

Rules (inventory §B.7, §E.3): a provider's API listing gets the catalog's context window (when the API stated none)
and list prices; when the API cannot be asked, the catalog's own entries for that vendor stand in (source
``static``), and providers the catalog does not cover offer just their configured model. The configured model is
always marked ``is_default`` and listed first, even when the API did not list it. A failing provider never stops the
others: its error is returned beside its models.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ironhive.domain.context.catalog import BUILTIN_MODELS, DEFAULT_CATALOG, ModelCatalog, ModelInfo
from ironhive.domain.errors import IronHiveError
from ironhive.ports.models import ListedModel, ModelLister

_OPENAI_FAMILIES = ("gpt-", "chatgpt-", "o1", "o3", "o4")

STATIC_FAMILIES: Mapping[str, tuple[str, ...]] = {
    "openai": _OPENAI_FAMILIES,
    "azure": _OPENAI_FAMILIES,
    "anthropic": ("claude-",),
    "google": ("gemini-",),
    "xai": ("grok-",),
}
"""The vendors whose models the built-in catalog covers, each with the name prefixes of its catalog entries."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ListingRequest:
    """What to list for one provider.

    Attributes:
        provider: The canonical provider name.
        lister: Asks the provider; ``None`` when there is nothing to ask (the static entries and default only).
        default_model: The provider's configured model, marked ``is_default``.
    """

    provider: str
    lister: ModelLister | None = None
    default_model: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ProviderListing:
    """The models of one provider, and why its API listing was not used if it was not.

    Attributes:
        provider: The canonical provider name.
        models: The configured model first, the others by id.
        error: The failure of the provider's listing (never holding its key), or ``None``.
    """

    provider: str
    models: tuple[ListedModel, ...]
    error: str | None = None


async def list_models(
    requests: Sequence[ListingRequest],
    *,
    catalog: ModelCatalog = DEFAULT_CATALOG,
    static_models: Mapping[str, ModelInfo] = BUILTIN_MODELS,
) -> list[ProviderListing]:
    """List every requested provider at once (a slow one does not delay the others' requests).

    Args:
        requests: The providers, in the order the listings are returned.
        catalog: Context windows and prices to enrich the API listings with.
        static_models: The entries that stand in when a known vendor's API cannot be asked.

    Returns:
        One listing per request, in order.
    """
    tasks = (list_provider(request, catalog=catalog, static_models=static_models) for request in requests)
    return list(await asyncio.gather(*tasks))


async def list_provider(
    request: ListingRequest,
    *,
    catalog: ModelCatalog = DEFAULT_CATALOG,
    static_models: Mapping[str, ModelInfo] = BUILTIN_MODELS,
) -> ProviderListing:
    """List one provider: its API listing enriched from the catalog, else its static entries; the default marked.

    Args:
        request: The provider, its lister and its configured model.
        catalog: Context windows and prices to enrich the API listing with.
        static_models: The entries that stand in when a known vendor's API cannot be asked.

    Returns:
        The listing; a failure of the lister is in ``error``, never raised.
    """
    listed: list[ListedModel] | None = None
    error: str | None = None
    if request.lister is not None:
        try:
            listed = [enrich(model, catalog) for model in await request.lister.list_models()]
        except IronHiveError as exc:
            error = str(exc)
        except Exception as exc:  # one provider must not stop the listing; an unknown error's text may hold a key
            error = f"{request.provider}: listing failed unexpectedly ({type(exc).__name__})"
    if listed is None:
        listed = static_entries(request.provider, static_models)
    models = with_default(listed, request.provider, request.default_model, catalog)
    return ProviderListing(provider=request.provider, models=tuple(models), error=error)


def enrich(model: ListedModel, catalog: ModelCatalog = DEFAULT_CATALOG) -> ListedModel:
    """Fill in what the catalog knows: the context window (unless the provider stated one) and the list prices."""
    info = catalog.lookup(model.model_id)
    if info is None:
        return model
    return replace(
        model,
        context_window=model.context_window if model.context_window is not None else info.context_window,
        input_price_per_million=(
            model.input_price_per_million if model.input_price_per_million is not None else info.input_price
        ),
        output_price_per_million=(
            model.output_price_per_million if model.output_price_per_million is not None else info.output_price
        ),
    )


def static_entries(provider: str, static_models: Mapping[str, ModelInfo] = BUILTIN_MODELS) -> list[ListedModel]:
    """The catalog's entries for a known vendor (source ``static``), by id; empty for other providers."""
    families = STATIC_FAMILIES.get(provider, ())
    return [
        ListedModel(
            model_id=name,
            provider=provider,
            context_window=info.context_window,
            input_price_per_million=info.input_price,
            output_price_per_million=info.output_price,
            source="static",
        )
        for name, info in sorted(static_models.items())
        if name.lower().startswith(families)
    ]


def with_default(
    models: Sequence[ListedModel], provider: str, default_model: str | None, catalog: ModelCatalog = DEFAULT_CATALOG
) -> list[ListedModel]:
    """Mark the configured model (adding it, source ``static``, when not listed) and order: it first, then by id."""
    ordered = sorted(models, key=lambda model: (model.model_id.casefold(), model.model_id))
    if not default_model:
        return ordered
    for index, model in enumerate(ordered):
        if same_model(model.model_id, default_model):
            return [replace(model, is_default=True), *ordered[:index], *ordered[index + 1 :]]
    configured = ListedModel(model_id=default_model, provider=provider, source="static", is_default=True)
    return [enrich(configured, catalog), *ordered]


def same_model(listed: str, configured: str) -> bool:
    """Whether a listed id names the configured model (case aside; Ollama lists ``llama3`` as ``llama3:latest``)."""
    listed_key, configured_key = listed.strip().casefold(), configured.strip().casefold()
    return listed_key in (configured_key, f"{configured_key}:latest") or configured_key == f"{listed_key}:latest"
