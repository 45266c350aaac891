"""The model-listing rules: catalog enrichment, the static fall-back, the configured model marked and listed first."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ironhive.domain.context.catalog import BUILTIN_MODELS, ModelCatalog, ModelInfo
from ironhive.domain.errors import ProviderError
from ironhive.domain.model_listing import (
    ListingRequest,
    ProviderListing,
    enrich,
    list_models,
    list_provider,
    same_model,
    static_entries,
    with_default,
)
from ironhive.ports.models import ListedModel

SECRET = "sk-secret-0123456789"


class FixedLister:
    """Answers with fixed models after an optional delay."""

    def __init__(self, *models: ListedModel, delay: float = 0.0) -> None:
        self._models = list(models)
        self._delay = delay
        self.calls = 0

    async def list_models(self) -> list[ListedModel]:
        self.calls += 1
        await asyncio.sleep(self._delay)
        return list(self._models)


class FailingLister:
    """Raises the given error."""

    def __init__(self, error: Exception) -> None:
        self._error = error

    async def list_models(self) -> list[ListedModel]:
        raise self._error


def api(model_id: str, provider: str = "openai", **fields: Any) -> ListedModel:
    return ListedModel(model_id=model_id, provider=provider, **fields)


async def test_api_listing_is_enriched_and_the_default_comes_first() -> None:
    lister = FixedLister(api("gpt-4o"), api("gpt-4o-mini-2024-07-18"), api("text-embedding-3-small"))
    listing = await list_provider(
        ListingRequest(provider="openai", lister=lister, default_model="gpt-4o-mini-2024-07-18")
    )
    assert listing.error is None
    assert listing.models == (
        api("gpt-4o-mini-2024-07-18", context_window=128_000, input_price_per_million=0.15,
            output_price_per_million=0.60, is_default=True),
        api("gpt-4o", context_window=128_000, input_price_per_million=2.50, output_price_per_million=10.0),
        api("text-embedding-3-small"),
    )  # fmt: skip


def test_a_window_the_provider_states_beats_the_catalogs() -> None:
    enriched = enrich(api("claude-sonnet-4-5-20250929", "anthropic", context_window=1_000_000))
    assert enriched.context_window == 1_000_000
    assert (enriched.input_price_per_million, enriched.output_price_per_million) == (3.0, 15.0)


async def test_a_configured_model_the_api_did_not_list_is_added_as_static() -> None:
    listing = await list_provider(
        ListingRequest(provider="openai", lister=FixedLister(api("gpt-4o")), default_model="o3-mini")
    )
    assert [(m.model_id, m.source, m.is_default) for m in listing.models] == [
        ("o3-mini", "static", True),
        ("gpt-4o", "api", False),
    ]
    assert listing.models[0].context_window == 200_000


@pytest.mark.parametrize("provider", ["openai", "azure", "anthropic", "google", "xai"])
async def test_a_known_vendor_whose_api_fails_gets_the_catalogs_entries(provider: str) -> None:
    error = ProviderError(f"could not connect to {provider}: refused", provider=provider, retryable=True)
    listing = await list_provider(ListingRequest(provider=provider, lister=FailingLister(error), default_model=None))
    assert listing.error == str(error)
    assert listing.models
    assert {model.source for model in listing.models} == {"static"}
    for model in listing.models:
        info = BUILTIN_MODELS[model.model_id]
        assert (model.context_window, model.input_price_per_million) == (info.context_window, info.input_price)
    ids = [model.model_id for model in listing.models]
    assert ids == sorted(ids)
    openai_families = ("gpt-", "chatgpt-", "o1", "o3", "o4")
    families = {"openai": openai_families, "azure": openai_families, "anthropic": ("claude-",)}
    families |= {"google": ("gemini-",), "xai": ("grok-",)}
    assert ids == sorted(name for name in BUILTIN_MODELS if name.startswith(families[provider]))


async def test_static_entries_mark_the_configured_model() -> None:
    error = ProviderError("anthropic returned HTTP 401: invalid x-api-key", status=401, provider="anthropic")
    request = ListingRequest(provider="anthropic", lister=FailingLister(error), default_model="claude-sonnet-4-5")
    listing = await list_provider(request)
    assert listing.models[0].model_id == "claude-sonnet-4-5"
    assert listing.models[0].is_default
    assert sum(model.is_default for model in listing.models) == 1


@pytest.mark.parametrize("provider", ["gpustack", "ollama", "lmstudio", "lmsupply"])
async def test_other_providers_whose_api_fails_offer_just_the_configured_model(provider: str) -> None:
    error = ProviderError(f"could not connect to {provider}", provider=provider, retryable=True)
    listing = await list_provider(ListingRequest(provider=provider, lister=FailingLister(error), default_model="qwen3"))
    assert listing.models == (ListedModel(model_id="qwen3", provider=provider, source="static", is_default=True),)
    unconfigured = await list_provider(ListingRequest(provider=provider, lister=FailingLister(error)))
    assert (unconfigured.models, unconfigured.error) == ((), str(error))


async def test_an_unexpected_error_is_reported_by_type_only() -> None:
    request = ListingRequest(provider="openai", lister=FailingLister(ValueError(f"bad answer for key {SECRET}")))
    listing = await list_provider(request)
    assert listing.error == "openai: listing failed unexpectedly (ValueError)"
    assert listing.models


async def test_providers_are_listed_at_once_and_returned_in_order() -> None:
    slow, fast = FixedLister(api("a", "gpustack"), delay=0.3), FixedLister(api("b", "lmstudio"), delay=0.3)
    loop = asyncio.get_running_loop()
    started = loop.time()
    listings = await list_models(
        [ListingRequest(provider="gpustack", lister=slow), ListingRequest(provider="lmstudio", lister=fast)]
    )
    assert loop.time() - started < 0.55  # both waited together, not one after the other
    assert [listing.provider for listing in listings] == ["gpustack", "lmstudio"]
    assert (slow.calls, fast.calls) == (1, 1)


async def test_without_a_lister_the_default_and_static_entries_are_listed() -> None:
    listing = await list_provider(ListingRequest(provider="scripted", default_model="echo"))
    assert listing == ProviderListing(
        provider="scripted",
        models=(ListedModel(model_id="echo", provider="scripted", source="static", is_default=True),),
    )


def test_static_entries_come_from_the_given_table() -> None:
    table = {
        "grok-9": ModelInfo(context_window=1000, input_price=1.0, output_price=2.0),
        "gpt-9": ModelInfo(context_window=5),
    }
    assert static_entries("xai", table) == [
        ListedModel(
            model_id="grok-9",
            provider="xai",
            context_window=1000,
            input_price_per_million=1.0,
            output_price_per_million=2.0,
            source="static",
        )
    ]
    assert static_entries("lmstudio", table) == []


def test_a_custom_catalog_enriches() -> None:
    catalog = ModelCatalog({"house-model": ModelInfo(context_window=32_000, input_price=0.5, output_price=1.0)})
    listed = with_default([api("house-model-v2", "gpustack")], "gpustack", "house-model-v2", catalog)
    assert listed == [api("house-model-v2", "gpustack", is_default=True)]  # with_default marks, it does not enrich
    assert enrich(listed[0], catalog).context_window == 32_000


@pytest.mark.parametrize(
    ("listed", "configured", "same"),
    [
        ("llama3:latest", "llama3", True),
        ("llama3", "llama3:latest", True),
        ("GPT-4o", "gpt-4o", True),
        ("llama3:8b", "llama3", False),
        ("gpt-4o-mini", "gpt-4o", False),
    ],
)
def test_same_model(listed: str, configured: str, same: bool) -> None:
    assert same_model(listed, configured) is same
