"""The OpenAI-compatible providers (OpenAI, xAI, GPUStack, Ollama, LM Studio, Azure OpenAI): one spec each."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING

from ironhive.adapters.provider_spec import Connection, ProviderSpec, keyed_connection

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.adapters.diagnostics.connectivity import ModelEndpoint
    from ironhive.ports.chat import ChatClient
    from ironhive.ports.models import ModelLister

AZURE_API_PATH = "/openai/v1/"
"""The path of Azure OpenAI's v1 API below the resource endpoint: the client and doctor both use it."""

OLLAMA_ENDPOINT = "http://localhost:11434"
"""Where a local Ollama server listens by default (its OpenAI-compatible API is below ``/v1``)."""

THROUGH = "`openai` SDK"


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


def azure_base_url(endpoint: str) -> str:
    """Azure OpenAI's v1 API base URL below a resource endpoint (``https://NAME.openai.azure.com``)."""
    return endpoint.rstrip("/") + AZURE_API_PATH


def openai_client(name: str, connection: Connection, model: str) -> ChatClient:
    """The chat client of an OpenAI-compatible provider: over the Responses API when its connection says so, else
    over chat completions."""
    if connection.api == "responses":
        from ironhive.adapters.openai.responses_client import OpenAIResponsesChatClient

        return OpenAIResponsesChatClient(
            api_key=connection.api_key,
            model=model,
            base_url=connection.base_url,
            provider_name=name,
            default_headers=connection.headers,
        )
    from ironhive.adapters.openai.client import OpenAIChatClient

    return OpenAIChatClient(
        api_key=connection.api_key,
        model=model,
        base_url=connection.base_url,
        provider_name=name,
        default_headers=connection.headers,
    )


def openai_lister(name: str, connection: Connection, timeout: float) -> ModelLister:
    """The model lister of an OpenAI-compatible provider."""
    from ironhive.adapters.openai.models import OpenAIModelLister

    return OpenAIModelLister(
        api_key=connection.api_key,
        base_url=connection.base_url,
        provider_name=name,
        timeout=timeout,
        default_headers=connection.headers,
    )


def openai_probe(spec: ProviderSpec, connection: Connection, environ: Mapping[str, str]) -> ModelEndpoint:
    """``GET {base}/models``, with the key as a bearer token when the provider has one (local servers have none)."""
    from ironhive.adapters.diagnostics.connectivity import openai_compatible_endpoint

    keyed = "apiKey" in spec.required
    return openai_compatible_endpoint(
        spec.name,
        connection.base_url or _openai_default_endpoint(),
        connection.api_key if keyed else None,
        connection.model,
        key_setting=f"{spec.section}.apiKey" if keyed and connection.api_key else None,
        endpoint_setting=f"{spec.section}.endpoint",
    )


def _azure_probe(spec: ProviderSpec, connection: Connection, environ: Mapping[str, str]) -> ModelEndpoint:
    """The v1 API lists base models, not deployments, so the deployment is not looked for."""
    from ironhive.adapters.diagnostics.connectivity import openai_compatible_endpoint

    return openai_compatible_endpoint(
        spec.name,
        connection.base_url or "",
        None,
        None,
        headers=connection.headers,
        key_setting=f"{spec.section}.apiKey",
        endpoint_setting=f"{spec.section}.endpoint",
    )


def _openai_default_endpoint() -> str:
    from ironhive.adapters.config.schema import OpenAISection

    return OpenAISection().endpoint


def _openai(config: IronHiveConfig) -> Connection:
    """OpenAI's own endpoint speaks Responses unless ``openai.api`` says otherwise; another endpoint (an
    OpenAI-compatible server) speaks chat completions unless ``openai.api: responses``."""
    endpoint = config.openai.endpoint
    default = endpoint.rstrip("/") == _openai_default_endpoint().rstrip("/")
    api = config.openai.api or ("responses" if default else "chat")
    return Connection(
        api_key=config.openai.api_key or "", base_url=None if default else endpoint, model=config.openai.model, api=api
    )


def _gpustack(config: IronHiveConfig) -> Connection:
    gpu = config.gpu_stack
    return Connection(api_key=gpu.api_key or "", base_url=gpustack_base_url(gpu.endpoint or ""), model=gpu.model)


def _ollama(config: IronHiveConfig) -> Connection:
    ollama = config.ollama
    return Connection(api_key="ollama", base_url=ollama_base_url(ollama.endpoint), model=ollama.model)


def _lmstudio(config: IronHiveConfig) -> Connection:
    studio = config.lmstudio
    return Connection(api_key="lm-studio", base_url=studio.endpoint, model=studio.model)


def _azure(config: IronHiveConfig) -> Connection:
    azure = config.azureopenai
    return Connection(
        api_key=azure.api_key or "",
        base_url=azure_base_url(azure.endpoint or ""),
        model=azure.deployment_name,
        headers={"api-key": azure.api_key or ""},
        api=azure.api or "chat",
    )


_compatible = partial(ProviderSpec, client=openai_client, lister=openai_lister, probe=openai_probe, through=THROUGH)
"""A spec of a provider speaking OpenAI chat completions."""

GPUSTACK = _compatible(
    name="gpustack",
    title="GPUStack",
    aliases=("gpu-stack",),
    section="gpuStack",
    environment=(
        ("GPUSTACK_ENDPOINT", "endpoint"),
        ("GPUSTACK_API_KEY", "apiKey"),
        ("GPUSTACK_MODEL", "model"),
        ("GPUSTACK_EMBEDDING_MODEL", "embeddingModel"),
        ("GPUSTACK_RERANK_MODEL", "rerankModel"),
    ),
    required=("endpoint", "apiKey", "model"),
    model_keys=("model", "embeddingModel", "rerankModel"),
    connect=_gpustack,
)

OPENAI = _compatible(
    name="openai",
    title="OpenAI",
    section="openai",
    environment=(("OPENAI_API_KEY", "apiKey"), ("OPENAI_MODEL", "model"), ("OPENAI_ENDPOINT", "endpoint")),
    required=("apiKey", "model"),
    model_keys=("model",),
    connect=_openai,
)

XAI = _compatible(
    name="xai",
    title="xAI",
    aliases=("grok",),
    section="xai",
    environment=(("XAI_API_KEY", "apiKey"), ("XAI_MODEL", "model"), ("XAI_ENDPOINT", "endpoint")),
    required=("apiKey", "model"),
    model_keys=("model",),
    connect=keyed_connection("xai"),
)

OLLAMA = _compatible(
    name="ollama",
    title="Ollama",
    section="ollama",
    environment=(("OLLAMA_ENDPOINT", "endpoint"), ("OLLAMA_MODEL", "model"), ("OLLAMA_ENABLED", "enabled")),
    model_keys=("model",),
    switch="enabled",
    usable_with_model=True,
    connect=_ollama,
)

LMSTUDIO = _compatible(
    name="lmstudio",
    title="LM Studio",
    section="lmstudio",
    environment=(("LMSTUDIO_ENDPOINT", "endpoint"), ("LMSTUDIO_MODEL", "model"), ("LMSTUDIO_ENABLED", "enabled")),
    model_keys=("model",),
    switch="enabled",
    usable_with_model=True,
    connect=_lmstudio,
)

AZURE = _compatible(
    name="azure",
    title="Azure OpenAI",
    aliases=("azureopenai",),
    section="azureopenai",
    environment=(
        ("AZURE_OPENAI_ENDPOINT", "endpoint"),
        ("AZURE_OPENAI_API_KEY", "apiKey"),
        ("AZURE_OPENAI_DEPLOYMENT", "deploymentName"),
    ),
    required=("endpoint", "apiKey", "deploymentName"),
    model_keys=("deploymentName",),
    model_required=False,
    connect=_azure,
    probe=_azure_probe,
)
