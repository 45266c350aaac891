"""The Google AI (Gemini) provider's spec: its names, settings, client, model listing and doctor check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ironhive.adapters.provider_spec import Connection, ProviderSpec, keyed_connection

if TYPE_CHECKING:
    from ironhive.adapters.diagnostics.connectivity import ModelEndpoint
    from ironhive.ports.chat import ChatClient
    from ironhive.ports.models import ModelLister


def _client(name: str, connection: Connection, model: str) -> ChatClient:
    from ironhive.adapters.google.client import GoogleGenAIChatClient

    return GoogleGenAIChatClient(api_key=connection.api_key, model=model, base_url=connection.base_url)


def _lister(name: str, connection: Connection, timeout: float) -> ModelLister:
    from ironhive.adapters.google.models import GoogleGenAIModelLister

    return GoogleGenAIModelLister(api_key=connection.api_key, base_url=connection.base_url, timeout=timeout)


def _probe(spec: ProviderSpec, connection: Connection, environ: Mapping[str, str]) -> ModelEndpoint:
    from ironhive.adapters.diagnostics.connectivity import gemini_endpoint

    return gemini_endpoint(connection.api_key, connection.model, environ, connection.base_url)


GOOGLE = ProviderSpec(
    name="google",
    title="Google AI",
    aliases=("gemini", "googleai"),
    section="googleai",
    # GOOGLE_API_KEY first, so GOOGLEAI_API_KEY wins when both are set.
    environment=(("GOOGLE_API_KEY", "apiKey"), ("GOOGLEAI_API_KEY", "apiKey"), ("GOOGLEAI_MODEL", "model")),
    required=("apiKey", "model"),
    model_keys=("model",),
    connect=keyed_connection("googleai"),
    client=_client,
    lister=_lister,
    probe=_probe,
    through="`google-genai` SDK",
)
