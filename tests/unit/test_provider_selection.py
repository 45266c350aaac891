"""Provider selection: priority order, names and aliases, ``-m provider/model``, endpoints, and the error texts."""

from __future__ import annotations

from typing import Any

import pytest

from ironhive.adapters.config.schema import IronHiveConfig
from ironhive.domain.errors import ConfigurationError
from ironhive.providers import gpustack_base_url, ollama_base_url, provider_chain, select_provider


def config(**sections: Any) -> IronHiveConfig:
    return IronHiveConfig.model_validate({"lmsupply": {"enabled": False}, **sections})


OPENAI = {"apiKey": "sk-o", "model": "gpt-4o-mini"}
ANTHROPIC = {"apiKey": "sk-a", "model": "claude-sonnet-4-5"}
GOOGLE = {"apiKey": "g", "model": "gemini-2.5-flash"}
XAI = {"apiKey": "x", "model": "grok-4"}
GPUSTACK = {"endpoint": "http://gpu:8080", "apiKey": "k", "model": "qwen"}


@pytest.mark.parametrize(
    ("sections", "expected"),
    [
        ({"openai": OPENAI, "anthropic": ANTHROPIC}, "openai"),
        ({"anthropic": ANTHROPIC, "googleai": GOOGLE}, "anthropic"),
        ({"googleai": GOOGLE, "xai": XAI}, "google"),
        ({"xai": XAI, "ollama": {"enabled": True, "model": "llama3.2"}}, "xai"),
        ({"gpuStack": GPUSTACK, "openai": OPENAI}, "gpustack"),
        ({"ollama": {"enabled": True, "model": "llama3.2"}, "lmstudio": {"enabled": True, "model": "m"}}, "ollama"),
        ({"lmstudio": {"enabled": True, "model": "m"}}, "lmstudio"),
        ({"openai": {"apiKey": "sk-o"}, "anthropic": ANTHROPIC}, "anthropic"),  # no model: not configured
    ],
)
def test_the_first_configured_provider_in_priority_order(sections: dict[str, Any], expected: str) -> None:
    assert select_provider(None, None, config(**sections)).name == expected


@pytest.mark.parametrize(
    ("provider", "expected"),
    [("claude", "anthropic"), ("GEMINI", "google"), ("grok", "xai"), ("OpenAI", "openai")],
)
def test_names_and_aliases_are_case_insensitive(provider: str, expected: str) -> None:
    everything = config(openai=OPENAI, anthropic=ANTHROPIC, googleai=GOOGLE, xai=XAI)
    assert select_provider(provider, None, everything).name == expected


def test_model_with_a_provider_prefix_selects_that_provider() -> None:
    choice = select_provider(None, "anthropic/claude-opus-4-1", config(openai=OPENAI, anthropic=ANTHROPIC))
    assert (choice.name, choice.model) == ("anthropic", "claude-opus-4-1")


def test_a_slash_that_names_no_provider_stays_part_of_the_model() -> None:
    choice = select_provider(None, "meta-llama/Llama-3", config(openai=OPENAI))
    assert (choice.name, choice.model) == ("openai", "meta-llama/Llama-3")


def test_unknown_provider_lists_the_names() -> None:
    with pytest.raises(ConfigurationError) as raised:
        select_provider("nope", None, config(openai=OPENAI))
    assert str(raised.value) == (
        "Provider 'nope' not found. Available: gpustack, openai, anthropic, google, xai, ollama, lmstudio, azure, "
        "lmsupply, scripted"
    )


def test_known_but_unconfigured_provider() -> None:
    with pytest.raises(ConfigurationError, match=r"^Provider 'claude' is not available or configured\.$"):
        select_provider("claude", None, config(openai=OPENAI))


def test_nothing_configured_and_local_off() -> None:
    with pytest.raises(ConfigurationError, match=r"^No API provider configured or available"):
        select_provider(None, None, config())


def test_the_chain_follows_the_selected_provider_and_skips_unconfigured_entries() -> None:
    chain = provider_chain(
        select_provider(None, None, config(openai=OPENAI, anthropic=ANTHROPIC)),
        config(openai=OPENAI, anthropic=ANTHROPIC, providers={"chain": ["claude", "gemini", "openai"]}),
    )
    assert [choice.name for choice in chain] == ["openai", "anthropic"]


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("http://gpu:8080", "http://gpu:8080/v1-openai/"),
        ("http://gpu:8080/", "http://gpu:8080/v1-openai/"),
        ("http://gpu:8080/v1", "http://gpu:8080/v1-openai/"),
        ("http://gpu:8080/v1-openai", "http://gpu:8080/v1-openai/"),
        ("http://gpu:8080/v1-openai/", "http://gpu:8080/v1-openai/"),
    ],
)
def test_gpustack_endpoint_normalisation(endpoint: str, expected: str) -> None:
    assert gpustack_base_url(endpoint) == expected


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("http://localhost:11434", "http://localhost:11434/v1"),
        ("http://localhost:11434/v1/", "http://localhost:11434/v1"),
    ],
)
def test_ollama_endpoint_with_or_without_v1(endpoint: str, expected: str) -> None:
    assert ollama_base_url(endpoint) == expected
