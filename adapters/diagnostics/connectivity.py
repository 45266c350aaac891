"""Doctor's connectivity check: each provider is asked for its model list (OpenAI-compatible, Anthropic, Gemini)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from ironhive.adapters.diagnostics.probe import FetchResult, JsonRequest, fetch_all
from ironhive.adapters.diagnostics.report import CONNECTIVITY, Check

TIMEOUT_SECONDS = 5.0
"""How long each provider may take to list its models (they are asked at the same time)."""

ANTHROPIC_DEFAULT_BASE = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
GEMINI_DEFAULT_BASE = "https://generativelanguage.googleapis.com"
GEMINI_DEFAULT_VERSION = "v1beta"
_VERSION_SEGMENT = re.compile(r"v\d+(?:(?:alpha|beta)\d*)?")


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelEndpoint:
    """Where a provider lists its models.

    Attributes:
        provider: The provider's name, as shown.
        url: The listing URL.
        headers: Request headers (the API key goes here).
        model: The configured model, to tell whether the listing offers it.
        secrets: Values that must never appear in a message (the API key).
        key_setting: The config key of the API key (``googleai.apiKey``), named in hints.
        endpoint_setting: The config key or variable of the endpoint, named in hints.
    """

    provider: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    model: str | None = None
    secrets: tuple[str, ...] = ()
    key_setting: str | None = None
    endpoint_setting: str | None = None


def openai_compatible_endpoint(
    provider: str,
    base_url: str,
    api_key: str | None,
    model: str | None,
    *,
    headers: Mapping[str, str] | None = None,
    key_setting: str | None = None,
    endpoint_setting: str | None = None,
) -> ModelEndpoint:
    """``GET {base_url}/models`` with ``Authorization: Bearer <api_key>`` (OpenAI, xAI, GPUStack, Ollama, LM Studio).

    Args:
        provider: The provider's name.
        base_url: The OpenAI-compatible base URL (``.../v1``).
        api_key: Sent as a bearer token when set.
        model: The configured model.
        headers: Extra headers (Azure's ``api-key``); their values count as secrets.
        key_setting: The config key of the API key.
        endpoint_setting: The config key of the endpoint.
    """
    sent = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    sent.update(headers or {})
    secrets = tuple(value for value in (api_key, *(headers or {}).values()) if value)
    return ModelEndpoint(
        provider=provider,
        url=base_url.rstrip("/") + "/models",
        headers=sent,
        model=model,
        secrets=secrets,
        key_setting=key_setting,
        endpoint_setting=endpoint_setting,
    )


def anthropic_endpoint(
    api_key: str, model: str | None, environ: Mapping[str, str], endpoint: str | None = None
) -> ModelEndpoint:
    """``GET /v1/models`` of Anthropic: at ``anthropic.endpoint``, else ``ANTHROPIC_BASE_URL`` (as the SDK does).

    Args:
        api_key: Sent as ``x-api-key``.
        model: The configured model.
        environ: The environment (``ANTHROPIC_BASE_URL``).
        endpoint: The configured ``anthropic.endpoint`` (with or without ``/v1``).
    """
    base = (endpoint or "").strip() or (environ.get("ANTHROPIC_BASE_URL") or "").strip() or ANTHROPIC_DEFAULT_BASE
    base = base.rstrip("/").removesuffix("/v1")
    headers = {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}
    return ModelEndpoint(
        provider="anthropic",
        url=f"{base}/v1/models?limit=1000",
        headers=headers,
        model=model,
        secrets=(api_key,),
        key_setting="anthropic.apiKey",
        endpoint_setting="anthropic.endpoint" if endpoint else "ANTHROPIC_BASE_URL",
    )


def gemini_endpoint(
    api_key: str, model: str | None, environ: Mapping[str, str], endpoint: str | None = None
) -> ModelEndpoint:
    """``GET /<version>/models`` of the Gemini API: at ``googleai.endpoint``, else ``GOOGLE_GEMINI_BASE_URL``.

    A version segment ending the URL (``.../v1beta/``) is the API version, as the Gemini adapter reads it.

    Args:
        api_key: Sent as ``x-goog-api-key``.
        model: The configured model.
        environ: The environment (``GOOGLE_GEMINI_BASE_URL``, which google-genai reads).
        endpoint: The configured ``googleai.endpoint``.
    """
    configured = (endpoint or "").strip() or (environ.get("GOOGLE_GEMINI_BASE_URL") or "").strip()
    parts = urlsplit(configured or GEMINI_DEFAULT_BASE)
    path = parts.path.rstrip("/")
    version = GEMINI_DEFAULT_VERSION
    head, _, last = path.rpartition("/")
    if _VERSION_SEGMENT.fullmatch(last):
        version, path = last, head
    root = urlunsplit(parts._replace(path=path, query="", fragment="")).rstrip("/")
    return ModelEndpoint(
        provider="google",
        url=f"{root}/{version}/models?pageSize=1000",
        headers={"x-goog-api-key": api_key},
        model=model,
        secrets=(api_key,),
        key_setting="googleai.apiKey",
        endpoint_setting="googleai.endpoint" if endpoint else "GOOGLE_GEMINI_BASE_URL",
    )


def connectivity_checks(endpoints: Sequence[ModelEndpoint], *, timeout: float = TIMEOUT_SECONDS) -> list[Check]:
    """Ask every endpoint for its models at once, each within ``timeout`` seconds.

    Args:
        endpoints: The providers to ask.
        timeout: Seconds allowed (for all together: they run concurrently).

    Returns:
        One check per endpoint: a pass with the number of models, or an error naming the provider and the reason.
    """
    requests = [JsonRequest(url=endpoint.url, headers=endpoint.headers) for endpoint in endpoints]
    results = fetch_all(requests, timeout=timeout)
    return [_check(endpoint, result) for endpoint, result in zip(endpoints, results, strict=True)]


def model_ids(document: object) -> list[str] | None:
    """The model ids of a listing (``data[].id`` of OpenAI and Anthropic, ``models[].name`` of Gemini), or ``None``."""
    if not isinstance(document, Mapping):
        return None
    entries = document.get("data")
    key = "id"
    if entries is None:
        entries, key = document.get("models"), "name"
    if not isinstance(entries, list):
        return None
    ids = [entry.get(key) for entry in entries if isinstance(entry, Mapping)]
    return [item.removeprefix("models/") for item in ids if isinstance(item, str)]


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret of four or more characters replaced by ``***``."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _check(endpoint: ModelEndpoint, result: FetchResult) -> Check:
    name = endpoint.provider
    if result.error is not None:
        reason = scrub(result.error, endpoint.secrets)
        return Check(
            category=CONNECTIVITY,
            name=name,
            status="error",
            message=f"Cannot list the models of {name} at {scrub(result.url, endpoint.secrets)}: {reason}",
            hint=_hint(endpoint, result.status),
        )
    ids = model_ids(result.document)
    if ids is None:
        return Check(
            category=CONNECTIVITY,
            name=name,
            status="error",
            message=f"{name} answered {scrub(result.url, endpoint.secrets)} with something other than a model list",
            hint=_endpoint_hint(endpoint),
        )
    listed = f"Reachable; lists {len(ids)} model{'' if len(ids) == 1 else 's'}"
    if endpoint.model:
        found = endpoint.model in ids or endpoint.model.removeprefix("models/") in ids
        listed += f", {'including' if found else 'not including'} the configured '{endpoint.model}'"
    return Check(category=CONNECTIVITY, name=name, status="pass", message=listed)


def _hint(endpoint: ModelEndpoint, status: int | None) -> str:
    if status in (400, 401, 403) and endpoint.key_setting:
        return f"Check {endpoint.key_setting} (`ironhive get {endpoint.key_setting}` shows it masked)."
    if status == 404:
        return _endpoint_hint(endpoint)
    if status is not None:
        return "The provider answered with an error: check its status page, then run `ironhive doctor` again."
    return "Check the network, proxies (HTTPS_PROXY, NO_PROXY), the endpoint and that the server is running."


def _endpoint_hint(endpoint: ModelEndpoint) -> str:
    where = endpoint.endpoint_setting or "the endpoint setting"
    return f"Check {where}: it must be the API's base URL."
