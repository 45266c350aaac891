"""Chooses the chat provider (and the failover chain) from ``--provider``, ``-m`` and the merged configuration."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.adapters.llamacpp.spec import local_inference_available
from ironhive.adapters.openai.spec import gpustack_base_url, ollama_base_url
from ironhive.adapters.provider_registry import ALIASES, NAMES, SPECS, canonical, find, spec_of
from ironhive.adapters.provider_spec import ByteProgress
from ironhive.domain.errors import ConfigurationError
from ironhive.ports.chat import ChatClient

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig

__all__ = [
    "ALIASES",
    "PRIORITY",
    "PROVIDERS",
    "ProviderChoice",
    "canonical",
    "gpustack_base_url",
    "is_configured",
    "local_inference_available",
    "ollama_base_url",
    "provider_chain",
    "provider_choice",
    "select_provider",
    "split_model",
]

PRIORITY = tuple(spec.name for spec in SPECS if spec.automatic and spec.remote)
"""Remote providers in the order a run picks the first configured one; local inference comes after them."""
PROVIDERS = NAMES

_NO_PROVIDER = (
    "No API provider configured or available. Configure one (for example OPENAI_API_KEY and OPENAI_MODEL, or "
    "`ironhive set openai.apiKey …` and `ironhive set openai.model …`), or install local inference with: "
    'pip install "ironhive[local]" (LMSUPPLY_ENABLED=false turns local inference off).'
)


@dataclass(frozen=True, kw_only=True, slots=True)
class ProviderChoice:
    """A provider a run may use.

    Attributes:
        name: The provider's canonical name.
        model: The model name shown to the user.
        build: Builds the chat client (builds no SDK client and loads no model: that happens on first use).
    """

    name: str
    model: str
    build: Callable[[], ChatClient]


def split_model(model: str | None) -> tuple[str | None, str | None]:
    """``-m provider/model`` names a provider when the part before ``/`` is one; otherwise it is all model."""
    if model and "/" in model:
        head, tail = model.split("/", 1)
        if find(head) is not None:
            return canonical(head), tail
    return None, model


def is_configured(name: str, config: IronHiveConfig) -> bool:
    """Whether ``name`` has what it needs, by its spec's rule (``False`` for unknown names)."""
    spec = find(name)
    return spec is not None and spec.is_configured(config)


def select_provider(provider: str | None, model: str | None, config: IronHiveConfig) -> ProviderChoice:
    """Pick the provider and model of a run.

    Without ``provider`` (or a ``provider/model`` in ``-m``): the first configured provider in registry order
    (gpustack, openai, anthropic, google, xai, ollama, lmstudio, azure), else local inference when enabled and
    installed.

    Args:
        provider: The ``--provider`` value (a name or an alias such as claude, gemini, grok, local).
        model: The ``-m`` value; it overrides the provider's configured model.
        config: The merged configuration.

    Returns:
        The choice.

    Raises:
        ConfigurationError: The provider is unknown or not configured, or none is available.
    """
    from_model, model = split_model(model)
    name = canonical(provider) if provider else from_model
    if name is not None:
        spec = find(name)
        if spec is None:
            raise ConfigurationError(f"Provider '{provider}' not found. Available: {', '.join(NAMES)}")
        if not spec.is_configured(config) and not (model and spec.usable_with_model):
            raise ConfigurationError(f"Provider '{provider or name}' is not available or configured.")
        return provider_choice(name, config, model)
    for spec in SPECS:
        if spec.automatic and spec.is_configured(config):
            return provider_choice(spec.name, config, model)
    raise ConfigurationError(_NO_PROVIDER)


def provider_chain(first: ProviderChoice, config: IronHiveConfig) -> list[ProviderChoice]:
    """The failover chain: the selected provider, then the configured ``providers.chain`` entries that are set up."""
    chain = [first]
    for entry in config.providers.chain:
        spec = find(entry)
        if spec is None:
            raise ConfigurationError(
                f"providers.chain names an unknown provider '{entry}'. Available: {', '.join(NAMES)}"
            )
        if spec.name != first.name and spec.is_configured(config) and all(c.name != spec.name for c in chain):
            chain.append(provider_choice(spec.name, config, None))
    return chain


def provider_choice(name: str, config: IronHiveConfig, model: str | None) -> ProviderChoice:
    """The choice for provider ``name`` (its configured model unless ``model`` overrides it).

    Raises:
        ConfigurationError: The provider is unknown, or needs a model and has none.
    """
    spec = spec_of(name)
    choice = spec.choice(config, model, _CliSurface())
    return ProviderChoice(name=spec.name, model=choice.model, build=choice.build)


class _CliSurface:
    """The CLI's progress displays: a download bar and the local model's loading line, on stderr (a terminal only)."""

    @contextmanager
    def downloading(self, description: str) -> Iterator[ByteProgress]:
        from ironhive.cli.download_progress import DownloadProgress

        with DownloadProgress(description) as progress:
            yield progress.update

    def local_client(self, *, model_path: Path, n_ctx: int | None, extra_buffer_types: bool | None) -> ChatClient:
        from ironhive.cli.local_progress import LocalProgressLine, ProgressLlamaCppChatClient

        # Loading and prompt-reading progress on stderr, on a terminal only, erased when the answer starts.
        return ProgressLlamaCppChatClient(
            line=LocalProgressLine(sys.stderr),
            model_path=model_path,
            n_ctx=n_ctx,
            extra_buffer_types=extra_buffer_types,
        )
