"""The provider registry: every provider's spec, in the order a run picks the first configured one.

It lives in ``adapters`` (not in the composition root) because adapters read it too: the environment-variable layer
of the configuration and doctor's checks. Importing it imports no SDK: each spec loads its SDK when it builds a client.
Adding a provider is one new spec, listed here.
"""

from __future__ import annotations

from ironhive.adapters.anthropic.spec import ANTHROPIC
from ironhive.adapters.google.spec import GOOGLE
from ironhive.adapters.llamacpp.spec import LMSUPPLY
from ironhive.adapters.openai.spec import AZURE, GPUSTACK, LMSTUDIO, OLLAMA, OPENAI, XAI
from ironhive.adapters.provider_spec import ProviderSpec
from ironhive.adapters.scripted.spec import SCRIPTED
from ironhive.domain.errors import ConfigurationError

SPECS: tuple[ProviderSpec, ...] = (
    GPUSTACK,
    OPENAI,
    ANTHROPIC,
    GOOGLE,
    XAI,
    OLLAMA,
    LMSTUDIO,
    AZURE,
    LMSUPPLY,
    SCRIPTED,
)
"""Every provider: the remote ones in selection order, then local inference, then the scripted model."""

NAMES: tuple[str, ...] = tuple(spec.name for spec in SPECS)
"""The canonical names, in registry order."""

ALIASES: dict[str, str] = {alias: spec.name for spec in SPECS for alias in spec.aliases}
"""Alias → canonical name."""

_BY_NAME = {spec.name: spec for spec in SPECS}


def canonical(name: str) -> str:
    """The canonical provider name of ``name`` or one of its aliases (case-insensitive; unknown names lowered)."""
    lowered = name.strip().lower()
    return ALIASES.get(lowered, lowered)


def find(name: str) -> ProviderSpec | None:
    """The spec of ``name`` or an alias of it, or ``None``."""
    return _BY_NAME.get(canonical(name))


def spec_of(name: str) -> ProviderSpec:
    """The spec of ``name`` or an alias of it.

    Raises:
        ConfigurationError: No provider has that name (the message lists the names).
    """
    found = find(name)
    if found is None:
        raise ConfigurationError(f"Provider '{name}' not found. Available: {', '.join(NAMES)}")
    return found


def remote_specs() -> tuple[ProviderSpec, ...]:
    """The providers reached over HTTP, in selection order."""
    return tuple(spec for spec in SPECS if spec.remote)


def provider_names_help() -> str:
    """Every name with its aliases, as the CLI's help shows them: ``anthropic (claude), …``."""
    return ", ".join(f"{spec.name} ({', '.join(spec.aliases)})" if spec.aliases else spec.name for spec in SPECS)


def environment_variables() -> dict[str, tuple[str, str]]:
    """Every provider's environment variables → (config section, key), in the order they are applied."""
    return {variable: (spec.section, key) for spec in SPECS if spec.section for variable, key in spec.environment}


def untrusted_keys() -> dict[str, frozenset[str]]:
    """Each provider section → the keys naming a model, which an untrusted project file may set."""
    return {spec.section: frozenset(spec.model_keys) for spec in SPECS if spec.section and spec.model_keys}
