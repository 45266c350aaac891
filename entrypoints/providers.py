"""Chooses the chat provider (and the failover chain) from ``--provider``, ``-m`` and the merged configuration."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.domain.errors import ConfigurationError
from ironhive.ports.chat import ChatClient

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig

PRIORITY = ("gpustack", "openai", "anthropic", "google", "xai", "ollama", "lmstudio", "azure")
"""Remote providers in the order a run picks the first configured one; local inference comes after them."""
PROVIDERS = (*PRIORITY, "lmsupply", "scripted")
ALIASES = {"claude": "anthropic", "gemini": "google", "googleai": "google", "grok": "xai", "local": "lmsupply"}
ALIASES |= {"azureopenai": "azure", "gpu-stack": "gpustack"}

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


def canonical(name: str) -> str:
    """The canonical provider name of ``name`` or one of its aliases (case-insensitive)."""
    lowered = name.strip().lower()
    return ALIASES.get(lowered, lowered)


def split_model(model: str | None) -> tuple[str | None, str | None]:
    """``-m provider/model`` names a provider when the part before ``/`` is one; otherwise it is all model."""
    if model and "/" in model:
        head, tail = model.split("/", 1)
        if canonical(head) in PROVIDERS:
            return canonical(head), tail
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


def is_configured(name: str, config: IronHiveConfig) -> bool:
    """Whether ``name`` has what it needs (key and model for remote providers, ``enabled`` for local servers)."""
    match name:
        case "gpustack":
            gpu = config.gpu_stack
            return bool(gpu.endpoint and gpu.api_key and gpu.model)
        case "openai":
            return bool(config.openai.api_key and config.openai.model)
        case "anthropic":
            return bool(config.anthropic.api_key and config.anthropic.model)
        case "google":
            return bool(config.googleai.api_key and config.googleai.model)
        case "xai":
            return bool(config.xai.api_key and config.xai.model)
        case "ollama":
            return config.ollama.enabled
        case "lmstudio":
            return config.lmstudio.enabled
        case "azure":
            azure = config.azureopenai
            return bool(azure.endpoint and azure.api_key and azure.deployment_name)
        case "lmsupply":
            return config.lmsupply.enabled and (
                bool(config.lmsupply.model_path or config.lmsupply.hugging_face_repo) or local_inference_available()
            )
        case "scripted":
            return True
    return False


def select_provider(provider: str | None, model: str | None, config: IronHiveConfig) -> ProviderChoice:
    """Pick the provider and model of a run.

    Without ``provider`` (or a ``provider/model`` in ``-m``): the first configured provider in the order gpustack,
    openai, anthropic, google, xai, ollama, lmstudio, azure; else local inference when enabled and installed.

    Args:
        provider: The ``--provider`` value (aliases: claude, gemini, grok, local).
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
        if name not in PROVIDERS:
            raise ConfigurationError(f"Provider '{provider}' not found. Available: {', '.join(PROVIDERS)}")
        if not is_configured(name, config) and not (model and name in {"ollama", "lmstudio"}):
            raise ConfigurationError(f"Provider '{provider or name}' is not available or configured.")
        return provider_choice(name, config, model)
    for candidate in (*PRIORITY, "lmsupply"):
        if is_configured(candidate, config):
            return provider_choice(candidate, config, model)
    raise ConfigurationError(_NO_PROVIDER)


def provider_chain(first: ProviderChoice, config: IronHiveConfig) -> list[ProviderChoice]:
    """The failover chain: the selected provider, then the configured ``providers.chain`` entries that are set up."""
    chain = [first]
    for entry in config.providers.chain:
        name = canonical(entry)
        if name not in PROVIDERS:
            raise ConfigurationError(
                f"providers.chain names an unknown provider '{entry}'. Available: {', '.join(PROVIDERS)}"
            )
        if name != first.name and is_configured(name, config) and all(c.name != name for c in chain):
            chain.append(provider_choice(name, config, None))
    return chain


def _required_model(name: str, model: str | None) -> str:
    if not model:
        raise ConfigurationError(f"Provider '{name}' needs a model: set {name}.model or pass -m.")
    return model


@dataclass(frozen=True, kw_only=True, slots=True)
class Connection:
    """How to reach a remote provider: the wire it speaks and its settings from the configuration.

    Attributes:
        wire: ``openai`` (any OpenAI-compatible server), ``anthropic`` or ``google``.
        api_key: The key (a fixed placeholder for local servers that need none).
        base_url: The API base URL; ``None`` means the SDK's default.
        model: The configured model (Azure: the deployment), when set.
        headers: Extra headers of every request (Azure's ``api-key``).
    """

    wire: str
    api_key: str
    base_url: str | None
    model: str | None
    headers: dict[str, str] | None = None


def connection(name: str, config: IronHiveConfig) -> Connection | None:
    """The connection settings of remote provider ``name``; ``None`` for local inference and the scripted model."""
    from ironhive.adapters.config.schema import OpenAISection

    match name:
        case "openai":
            endpoint = config.openai.endpoint
            default = endpoint.rstrip("/") == OpenAISection().endpoint.rstrip("/")
            return Connection(
                wire="openai",
                api_key=config.openai.api_key or "",
                base_url=None if default else endpoint,
                model=config.openai.model,
            )
        case "gpustack":
            gpu = config.gpu_stack
            return Connection(
                wire="openai",
                api_key=gpu.api_key or "",
                base_url=gpustack_base_url(gpu.endpoint or ""),
                model=gpu.model,
            )
        case "xai":
            return Connection(
                wire="openai", api_key=config.xai.api_key or "", base_url=config.xai.endpoint, model=config.xai.model
            )
        case "ollama":
            return Connection(
                wire="openai",
                api_key="ollama",
                base_url=ollama_base_url(config.ollama.endpoint),
                model=config.ollama.model,
            )
        case "lmstudio":
            studio = config.lmstudio
            return Connection(wire="openai", api_key="lm-studio", base_url=studio.endpoint, model=studio.model)
        case "azure":
            azure = config.azureopenai
            return Connection(
                wire="openai",
                api_key=azure.api_key or "",
                base_url=(azure.endpoint or "").rstrip("/") + "/openai/v1/",
                model=azure.deployment_name,
                headers={"api-key": azure.api_key or ""},
            )
        case "anthropic":
            section = config.anthropic
            return Connection(
                wire="anthropic", api_key=section.api_key or "", base_url=section.endpoint, model=section.model
            )
        case "google":
            google = config.googleai
            return Connection(wire="google", api_key=google.api_key or "", base_url=google.endpoint, model=google.model)
    return None


def provider_choice(name: str, config: IronHiveConfig, model: str | None) -> ProviderChoice:
    """The choice for provider ``name`` (its configured model unless ``model`` overrides it)."""
    if name == "lmsupply":
        return _local(config, model)
    if name == "scripted":
        return _scripted(model)
    settings = connection(name, config)
    if settings is None:
        raise ConfigurationError(f"Provider '{name}' not found. Available: {', '.join(PROVIDERS)}")
    chosen = model or settings.model or ""
    if name != "azure":
        chosen = _required_model(name, chosen)
    return _remote(name, settings, chosen)


def gpustack_base_url(endpoint: str) -> str:
    """GPUStack's OpenAI-compatible base: a trailing ``/v1-openai`` or ``/v1`` is stripped, then ``/v1-openai/``."""
    base = endpoint.rstrip("/")
    for suffix in ("/v1-openai", "/v1"):
        base = base.removesuffix(suffix)
    return base + "/v1-openai/"


def ollama_base_url(endpoint: str) -> str:
    """Ollama's OpenAI-compatible base URL, whether the configured endpoint ends in ``/v1`` or not."""
    base = endpoint.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


def _remote(name: str, settings: Connection, model: str) -> ProviderChoice:
    def build() -> ChatClient:
        if settings.wire == "anthropic":
            from ironhive.adapters.anthropic.client import AnthropicChatClient

            return AnthropicChatClient(api_key=settings.api_key, model=model, base_url=settings.base_url)
        if settings.wire == "google":
            from ironhive.adapters.google.client import GoogleGenAIChatClient

            return GoogleGenAIChatClient(api_key=settings.api_key, model=model, base_url=settings.base_url)
        from ironhive.adapters.openai.client import OpenAIChatClient

        return OpenAIChatClient(
            api_key=settings.api_key,
            model=model,
            base_url=settings.base_url,
            provider_name=name,
            default_headers=settings.headers,
        )

    return ProviderChoice(name=name, model=model, build=build)


def _local(config: IronHiveConfig, model: str | None) -> ProviderChoice:
    """Local inference: ``-m`` or ``lmsupply.modelPath``, else a configured Hugging Face file (downloaded once into
    ``~/.ironhive/models``, honouring ``HF_ENDPOINT`` and ``HF_HUB_OFFLINE``), else the bundled SmolLM2 model."""
    section = config.lmsupply
    configured_path = model or section.model_path
    repo, file = section.hugging_face_repo, section.hugging_face_file
    if configured_path:
        shown = Path(configured_path).stem
    elif repo and file:
        shown = Path(file).stem
    else:
        shown = "SmolLM2-135M-Instruct"

    def build() -> ChatClient:
        import os
        import sys

        from ironhive.adapters.llamacpp.model_resolution import default_model_cache, resolve_model_path
        from ironhive.cli.download_progress import DownloadProgress
        from ironhive.cli.local_progress import LocalProgressLine, ProgressLlamaCppChatClient

        with DownloadProgress(f"Downloading {file}") as progress:
            model_path = resolve_model_path(
                model_path=configured_path,
                hf_repo=repo,
                hf_file=file,
                cache_dir=default_model_cache(Path.home()),
                environ=os.environ,
                progress=progress.update,
            )
        # Loading and prompt-reading progress on stderr, on a terminal only, erased when the answer starts.
        return ProgressLlamaCppChatClient(
            line=LocalProgressLine(sys.stderr),
            model_path=model_path,
            n_ctx=section.max_context_length,
            extra_buffer_types=section.extra_buffer_types,
        )

    return ProviderChoice(name="lmsupply", model=shown, build=build)


def _scripted(model: str | None) -> ProviderChoice:
    script = Path(model).expanduser() if model else None

    def build() -> ChatClient:
        from ironhive.adapters.scripted.client import ScriptedChatClient, echo_step

        if script is None:
            return ScriptedChatClient([echo_step], repeat_last=True, model="echo")
        from ironhive.adapters.scripted.script_file import load_scripted_client

        return load_scripted_client(script)

    return ProviderChoice(name="scripted", model=script.stem if script else "echo", build=build)
