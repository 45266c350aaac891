"""AnthropicModelLister: the ModelLister port over Anthropic's ``GET /v1/models`` (every page)."""

from __future__ import annotations

import anthropic

from ironhive.adapters.anthropic.errors import translate_error
from ironhive.domain.errors import ConfigurationError
from ironhive.ports.models import ListedModel

_PROVIDER = "anthropic"
# The SDK refuses to send a request without credentials; a keyless proxy at ``base_url`` gets this instead.
_NO_KEY = "no-key"


class AnthropicModelLister:
    """Lists Anthropic's models through the anthropic SDK, following the API's cursor pagination to the end.

    Each call builds its own SDK client and closes it before returning. The SDK's retries are off.

    Args:
        api_key: The API key; may be empty only when ``base_url`` points at a server that needs none.
        base_url: The API's base URL; a trailing ``/v1`` is dropped (the SDK adds it). ``None`` means the SDK's
            default (``ANTHROPIC_BASE_URL``, else Anthropic).
        timeout: Seconds each page request may take.
        page_size: Models asked for per page (the API allows 1 to 1000).

    Raises:
        ConfigurationError: The timeout or page size is out of range, or the key is missing for Anthropic itself.
    """

    def __init__(
        self, *, api_key: str, base_url: str | None = None, timeout: float = 10.0, page_size: int = 1000
    ) -> None:
        if timeout <= 0:
            raise ConfigurationError(f"{_PROVIDER}: the timeout must be positive, not {timeout}")
        if not 1 <= page_size <= 1000:
            raise ConfigurationError(f"{_PROVIDER}: the page size must be between 1 and 1000, not {page_size}")
        if not api_key and base_url is None:
            raise ConfigurationError(f"{_PROVIDER}: an API key is required")
        self._api_key = api_key
        self._base_url = base_url.rstrip("/").removesuffix("/v1") if base_url is not None else None
        self._timeout = timeout
        self._page_size = page_size

    async def list_models(self) -> list[ListedModel]:
        """Every model the API lists, newest first as it sends them, with display names and input limits.

        Raises:
            ProviderError: The API could not be reached, refused the key or answered with an error.
        """
        sdk = anthropic.AsyncAnthropic(
            api_key=self._api_key or _NO_KEY, base_url=self._base_url, timeout=self._timeout, max_retries=0
        )
        try:
            async with sdk:
                return [
                    ListedModel(
                        model_id=model.id,
                        provider=_PROVIDER,
                        display_name=model.display_name or None,
                        context_window=model.max_input_tokens,
                    )
                    async for model in sdk.models.list(limit=self._page_size)
                ]
        except anthropic.AnthropicError as exc:
            raise translate_error(exc, provider=_PROVIDER, secrets=(self._api_key,)) from exc


__all__ = ["AnthropicModelLister"]
