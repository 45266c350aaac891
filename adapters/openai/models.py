"""OpenAIModelLister: the ModelLister port over ``GET /models`` of OpenAI or any OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Mapping

import openai

from ironhive.adapters.openai.errors import translate_error
from ironhive.domain.errors import ConfigurationError
from ironhive.ports.models import ListedModel

DEFAULT_LIST_TIMEOUT = 10.0
"""Seconds a model listing may take: ``ironhive models`` waits for every provider, so a dead one must fail fast."""

# The SDK refuses to start without a key, but local OpenAI-compatible servers (Ollama, LM Studio) need none.
_NO_KEY = "no-key"


class OpenAIModelLister:
    """Lists the models of OpenAI, or of a server speaking its API (xAI, GPUStack, Azure, Ollama, LM Studio).

    Each call builds its own SDK client and closes it before returning, so the lister holds nothing open. The SDK's
    retries are off: a provider that does not answer is reported at once.

    Args:
        api_key: The API key; may be empty only when ``base_url`` points at a server that needs none.
        base_url: The API's base URL (ending in ``/v1``); ``None`` means the SDK's default (OpenAI).
        provider_name: The provider the models belong to, also used in error messages.
        timeout: Seconds the listing may take.
        default_headers: Headers sent with the request (e.g. Azure's ``api-key``).

    Raises:
        ConfigurationError: The timeout is not positive, or the key is missing for OpenAI itself.
    """

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        provider_name: str = "openai",
        timeout: float = DEFAULT_LIST_TIMEOUT,
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        if timeout <= 0:
            raise ConfigurationError(f"{provider_name}: the timeout must be positive, not {timeout}")
        if not api_key and base_url is None:
            raise ConfigurationError(f"{provider_name}: an API key is required")
        self._api_key = api_key
        self._base_url = base_url
        self._provider_name = provider_name
        self._timeout = timeout
        self._default_headers = dict(default_headers or {})

    async def list_models(self) -> list[ListedModel]:
        """The models ``GET /models`` reports, in the server's order.

        Raises:
            ProviderError: The server could not be reached, refused the key or answered with an error.
        """
        sdk = openai.AsyncOpenAI(
            api_key=self._api_key or _NO_KEY,
            base_url=self._base_url,
            timeout=self._timeout,
            max_retries=0,
            default_headers=self._default_headers or None,
        )
        try:
            async with sdk:
                return [
                    ListedModel(model_id=model.id, provider=self._provider_name) async for model in sdk.models.list()
                ]
        except openai.OpenAIError as exc:
            raise translate_error(exc, provider=self._provider_name, secrets=self._secrets()) from exc

    def _secrets(self) -> tuple[str, ...]:
        return (self._api_key, *self._default_headers.values())


__all__ = ["DEFAULT_LIST_TIMEOUT", "OpenAIModelLister"]
