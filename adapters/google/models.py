"""GoogleGenAIModelLister: the ModelLister port over the Gemini API's ``GET models`` through google-genai."""

from __future__ import annotations

import aiohttp
from google import genai
from google.genai import types

from ironhive.adapters.google.client import DEFAULT_API_VERSION, split_base_url
from ironhive.adapters.google.errors import SDK_ERRORS, translate_error
from ironhive.domain.errors import ConfigurationError
from ironhive.ports.models import ListedModel

_PROVIDER = "google"
_MODEL_PREFIX = "models/"
_GENERATE = "generateContent"


class GoogleGenAIModelLister:
    """Lists the Gemini API's base models that can chat, following its page tokens to the end.

    Models that state their supported methods but not ``generateContent`` (embedding, image-only models) are left
    out: ``ironhive`` could not use them. Each call builds its own SDK client and aiohttp session and closes both
    before returning; the SDK makes one attempt only.

    Args:
        api_key: The Gemini API key.
        base_url: The API's base URL, with or without the version; ``None`` means the SDK's default
            (``GOOGLE_GEMINI_BASE_URL``, else Google's).
        timeout: Seconds the listing may take.
        page_size: Models asked for per page (the API allows up to 1000).

    Raises:
        ConfigurationError: The key is empty, or the timeout or page size out of range.
    """

    def __init__(
        self, *, api_key: str, base_url: str | None = None, timeout: float = 10.0, page_size: int = 1000
    ) -> None:
        if not api_key.strip():
            raise ConfigurationError(f"{_PROVIDER}: an API key is required")
        if timeout <= 0:
            raise ConfigurationError(f"{_PROVIDER}: the timeout must be positive, not {timeout}")
        if not 1 <= page_size <= 1000:
            raise ConfigurationError(f"{_PROVIDER}: the page size must be between 1 and 1000, not {page_size}")
        self._api_key = api_key.strip()
        self._base_url = base_url
        self._timeout = timeout
        self._page_size = page_size

    async def list_models(self) -> list[ListedModel]:
        """The chat-capable base models, in the API's order, with display names and input limits.

        Raises:
            ProviderError: The API could not be reached, refused the key or answered with an error.
        """
        base_url, api_version = split_base_url(self._base_url) if self._base_url else (None, DEFAULT_API_VERSION)
        # An own session, as in GoogleGenAIChatClient: the SDK's would warn on first use and could not be closed here.
        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._timeout), trust_env=True)
        options = types.HttpOptions(
            base_url=base_url,
            api_version=api_version,
            timeout=max(1, round(self._timeout * 1000)),  # the SDK counts milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),
            aiohttp_client=session,
        )
        sdk = genai.Client(api_key=self._api_key, vertexai=False, http_options=options)
        try:
            pager = await sdk.aio.models.list(config=types.ListModelsConfig(page_size=self._page_size))
            return [_listed(model) async for model in pager if model.name and _can_chat(model)]
        except SDK_ERRORS as exc:
            raise translate_error(exc, provider=_PROVIDER, secrets=(self._api_key,)) from exc
        finally:
            await sdk.aio.aclose()
            sdk.close()
            await session.close()


def _can_chat(model: types.Model) -> bool:
    return not model.supported_actions or _GENERATE in model.supported_actions


def _listed(model: types.Model) -> ListedModel:
    name = (model.name or "").removeprefix(_MODEL_PREFIX)
    return ListedModel(
        model_id=name,
        provider=_PROVIDER,
        display_name=model.display_name or None,
        context_window=model.input_token_limit,
    )


__all__ = ["GoogleGenAIModelLister"]
