"""Chooses the chat provider from ``--provider``, ``-m`` and the environment (openai, local, scripted)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ironhive.domain.errors import ConfigurationError
from ironhive.ports.chat import ChatClient

PROVIDERS = ("openai", "local", "scripted")
ALIASES = {"lmsupply": "local"}

_NO_PROVIDER = (
    "No API provider configured or available. Set OPENAI_API_KEY and OPENAI_MODEL (and OPENAI_ENDPOINT for an "
    'OpenAI-compatible server), or install local inference with: pip install "ironhive[local]" '
    "(LMSUPPLY_ENABLED=false turns local inference off)."
)


@dataclass(frozen=True, kw_only=True, slots=True)
class ProviderChoice:
    """The provider a run uses.

    Attributes:
        name: The provider's canonical name.
        model: The model name shown to the user.
        build: Builds the chat client (called on first use).
    """

    name: str
    model: str
    build: Callable[[], ChatClient]


def _flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    value = environ.get(name, "").strip()
    return default if not value else value.lower() == "true"


def _split_model(model: str | None) -> tuple[str | None, str | None]:
    """``-m provider/model`` names a provider when the part before ``/`` is one; otherwise it is all model."""
    if model and "/" in model:
        head, tail = model.split("/", 1)
        canonical = ALIASES.get(head.lower(), head.lower())
        if canonical in PROVIDERS:
            return canonical, tail
    return None, model


def local_inference_available() -> bool:
    """Whether llama-cpp-python and the bundled model are installed (without importing either)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    from ironhive.adapters.llamacpp.model_files import bundled_model_path

    try:
        bundled_model_path()
    except ConfigurationError:
        return False
    return True


def select_provider(provider: str | None, model: str | None, environ: Mapping[str, str]) -> ProviderChoice:
    """Pick the provider and model for a run.

    Without ``provider``: OpenAI when ``OPENAI_API_KEY`` and ``OPENAI_MODEL`` are set, else local inference when it
    is enabled and installed.

    Args:
        provider: The ``--provider`` value (case-insensitive; ``lmsupply`` is an alias of ``local``).
        model: The ``-m`` value; ``provider/model`` selects that provider.
        environ: The environment variables.

    Returns:
        The choice.

    Raises:
        ConfigurationError: The named provider is unknown or not configured, or none is available.
    """
    from_model, model = _split_model(model)
    name = ALIASES.get(provider.lower(), provider.lower()) if provider else from_model
    if name is not None and name not in PROVIDERS:
        raise ConfigurationError(f"Provider '{provider}' not found. Available: {', '.join(PROVIDERS)}")
    openai_ready = bool(environ.get("OPENAI_API_KEY") and (model or environ.get("OPENAI_MODEL")))
    if name == "openai" or (name is None and openai_ready):
        if not openai_ready:
            raise ConfigurationError(
                "Provider 'openai' is not available or configured. Set OPENAI_API_KEY and OPENAI_MODEL."
            )
        return _openai(environ, model or environ["OPENAI_MODEL"])
    if name == "scripted":
        return _scripted(model)
    if not _flag(environ, "LMSUPPLY_ENABLED", default=True):
        if name == "local":
            raise ConfigurationError("Provider 'local' is not available or configured: LMSUPPLY_ENABLED is false.")
        raise ConfigurationError(_NO_PROVIDER)
    if name == "local" or local_inference_available():
        return _local(model)
    raise ConfigurationError(_NO_PROVIDER)


def _openai(environ: Mapping[str, str], model: str) -> ProviderChoice:
    api_key = environ["OPENAI_API_KEY"]
    endpoint = environ.get("OPENAI_ENDPOINT") or None

    def build() -> ChatClient:
        from ironhive.adapters.openai.client import OpenAIChatClient

        return OpenAIChatClient(api_key=api_key, model=model, base_url=endpoint)

    return ProviderChoice(name="openai", model=model, build=build)


def _local(model: str | None) -> ProviderChoice:
    model_path = Path(model).expanduser() if model else None

    def build() -> ChatClient:
        from ironhive.adapters.llamacpp.client import LlamaCppChatClient

        return LlamaCppChatClient(model_path=model_path)

    return ProviderChoice(name="local", model=model_path.stem if model_path else "SmolLM2-135M-Instruct", build=build)


def _scripted(model: str | None) -> ProviderChoice:
    script = Path(model).expanduser() if model else None

    def build() -> ChatClient:
        from ironhive.adapters.scripted.client import ScriptedChatClient, echo_step

        if script is None:
            return ScriptedChatClient([echo_step], repeat_last=True, model="echo")
        from ironhive.adapters.scripted.script_file import load_scripted_client

        return load_scripted_client(script)

    return ProviderChoice(name="scripted", model=script.stem if script else "echo", build=build)
