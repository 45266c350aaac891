"""The Anthropic provider's spec: its names, settings, client, model listing and doctor check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ironhive.adapters.provider_spec import Connection, ProviderSpec, keyed_connection

if TYPE_CHECKING:
    from ironhive.adapters.diagnostics.connectivity import ModelEndpoint
    from ironhive.ports.chat import ChatClient
    from ironhive.ports.models import ModelLister


def _client(name: str, connection: Connection, model: str) -> ChatClient:
    from ironhive.adapters.anthropic.client import AnthropicChatClient

    return AnthropicChatClient(api_key=connection.api_key, model=model, base_url=connection.base_url)


def _lister(name: str, connection: Connection, timeout: float) -> ModelLister:
    from ironhive.adapters.anthropic.models import AnthropicModelLister

    return AnthropicModelLister(api_key=connection.api_key, base_url=connection.base_url, timeout=timeout)


def _probe(spec: ProviderSpec, connection: Connection, environ: Mapping[str, str]) -> ModelEndpoint:
    from ironhive.adapters.diagnostics.connectivity import anthropic_endpoint

    return anthropic_endpoint(connection.api_key, connection.model, environ, connection.base_url)


ANTHROPIC = ProviderSpec(
    name="anthropic",
    title="Anthropic",
    aliases=("claude",),
    section="anthropic",
    environment=(("ANTHROPIC_API_KEY", "apiKey"), ("ANTHROPIC_MODEL", "model")),
    required=("apiKey", "model"),
    model_keys=("model",),
    connect=keyed_connection("anthropic"),
    client=_client,
    lister=_lister,
    probe=_probe,
    through="`anthropic` SDK",
)
