"""ModelCatalog lookups and the window resolution order (configured, client, catalog, unknown)."""

from __future__ import annotations

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient
from ironhive.domain.context.catalog import DEFAULT_CATALOG, ModelCatalog, ModelInfo, context_window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4-0613", 8_192),
        ("gpt-4-32k", 32_768),
        ("gpt-5-mini-2025-08-07", 400_000),
        ("o3-mini-2025-01-31", 200_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("claude-3-5-haiku-latest", 200_000),
        ("anthropic/claude-opus-4-1", 200_000),
        ("models/gemini-2.5-flash-preview-05-20", 1_048_576),
        ("gemini-1.5-pro-002", 2_097_152),
        ("grok-4-0709", 256_000),
        ("grok-4-fast-reasoning", 2_000_000),
        ("grok-2-vision-1212", 32_768),
        ("GPT-4O", 128_000),
    ],
)
def test_known_models_and_their_variants(model: str, window: int) -> None:
    assert DEFAULT_CATALOG.context_window(model) == window


@pytest.mark.parametrize("model", ["gpt-4.5-preview", "gpt-4omni", "llama3.2", "qwen2.5-coder:7b", "my-model", ""])
def test_unknown_models_stay_unknown(model: str) -> None:
    assert DEFAULT_CATALOG.context_window(model) is None


def test_the_longest_prefix_wins_and_prices_estimate_cost() -> None:
    mini = DEFAULT_CATALOG.lookup("gpt-4o-mini")
    assert mini is not None and mini.input_price == 0.15
    assert mini.cost(1_000_000, 1_000_000) == pytest.approx(0.75)
    assert ModelInfo(context_window=10).cost(1, 1) is None


def test_a_catalog_can_be_extended() -> None:
    catalog = DEFAULT_CATALOG.with_models({"my-model": ModelInfo(context_window=12_345)})
    assert catalog.context_window("my-model-v2") == 12_345
    assert catalog.context_window("gpt-4o") == 128_000
    assert ModelCatalog({}).context_window("gpt-4o") is None


class SizedClient(ScriptedChatClient):
    @property
    def context_size(self) -> int:
        return 4096


def test_the_window_resolution_order() -> None:
    assert context_window("gpt-4o", configured=65_536, client=SizedClient()) == 65_536
    assert context_window("gpt-4o", client=SizedClient()) == 4096
    assert context_window("gpt-4o", client=ScriptedChatClient()) == 128_000
    assert context_window("some-local-model", client=ScriptedChatClient()) is None
    assert context_window(None) is None
