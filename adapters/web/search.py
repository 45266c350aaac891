"""Web search backends: the result type, the backend protocol, and the keyed services Tavily and SearchApi."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

from ironhive.adapters.web.http import FetchedResource, WebClient
from ironhive.domain.errors import ToolError

TAVILY_URL = "https://api.tavily.com/search"
SEARCHAPI_URL = "https://www.searchapi.io/api/v1/search"
MAX_TAVILY_RESULTS = 20
"""Tavily accepts at most 20 results per search."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchHit:
    """One search result."""

    title: str
    url: str
    snippet: str = ""


class SearchBackend(Protocol):
    """A web search service."""

    @property
    def name(self) -> str:
        """The service's name as users know it (``DuckDuckGo``, ``Tavily``, ``SearchApi``)."""
        ...

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Search the web.

        Args:
            query: What to look for.
            max_results: The most results wanted.

        Returns:
            The results, best first (possibly none).

        Raises:
            ToolError: The service failed or refused.
        """
        ...


class TavilySearchBackend:
    """Tavily's search API: ``POST https://api.tavily.com/search`` with a bearer key; results in ``results[]``.

    Args:
        web: The HTTP client.
        api_key: The Tavily key (sent as ``Authorization: Bearer``; never shown in errors).
        url: The search endpoint (injectable for tests).
        search_depth: Tavily's ``search_depth`` (``basic`` costs one credit).
    """

    name = "Tavily"

    def __init__(self, web: WebClient, api_key: str, *, url: str = TAVILY_URL, search_depth: str = "basic") -> None:
        self._web = web
        self._api_key = api_key
        self._url = url
        self._search_depth = search_depth

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Search with Tavily."""
        payload: dict[str, str | int | bool] = {
            "query": query,
            "max_results": max(1, min(max_results, MAX_TAVILY_RESULTS)),
            "search_depth": self._search_depth,
            "include_answer": False,
            "include_raw_content": False,
        }
        response = await self._web.post_json(
            self._url, payload, headers={"Authorization": f"Bearer {self._api_key}"}, label="Tavily"
        )
        data = _json_object(response, "Tavily")
        results = data.get("results")
        hits = [
            SearchHit(title=_text(item.get("title")), url=_text(item.get("url")), snippet=_text(item.get("content")))
            for item in (results if isinstance(results, list) else [])
            if isinstance(item, dict) and _text(item.get("url"))
        ]
        return hits[:max_results]


class SearchApiSearchBackend:
    """SearchApi.io: ``GET …/api/v1/search?engine=<engine>&q=<query>&api_key=<key>``; results in ``organic_results``.

    Args:
        web: The HTTP client.
        api_key: The SearchApi key (a query parameter; errors never show the request URL).
        engine: The SearchApi engine (``google`` by default).
        url: The search endpoint (injectable for tests).
    """

    name = "SearchApi"

    def __init__(self, web: WebClient, api_key: str, *, engine: str = "google", url: str = SEARCHAPI_URL) -> None:
        self._web = web
        self._api_key = api_key
        self._engine = engine
        self._url = url

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Search with SearchApi."""
        params = {"engine": self._engine, "q": query, "api_key": self._api_key, "num": str(max(1, max_results))}
        response = await self._web.get(self._url, params=params, label="SearchApi")
        data = _json_object(response, "SearchApi")
        results = data.get("organic_results")
        hits = [
            SearchHit(title=_text(item.get("title")), url=_text(item.get("link")), snippet=_text(item.get("snippet")))
            for item in (results if isinstance(results, list) else [])
            if isinstance(item, dict) and _text(item.get("link"))
        ]
        return hits[:max_results]


def _json_object(response: FetchedResource, service: str) -> dict[str, object]:
    try:
        data = json.loads(response.text()) if response.body else None
    except json.JSONDecodeError:
        data = None
    if not response.ok:
        raise ToolError(f"{service} search failed: HTTP {response.status}{_error_detail(data)}.")
    if not isinstance(data, dict):
        raise ToolError(f"{service} search failed: the answer was not a JSON object.")
    return data


def _error_detail(data: object) -> str:
    """The service's own error message (Tavily: ``detail.error``; SearchApi: ``error``), when it gave one."""
    if not isinstance(data, dict):
        return ""
    detail = data.get("detail")
    if isinstance(detail, dict):
        detail = detail.get("error")
    message = detail if isinstance(detail, str) else data.get("error")
    if not isinstance(message, str) or not message.strip():
        return ""
    return f": {' '.join(message.split())[:300].rstrip('.')}"


def _text(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""
