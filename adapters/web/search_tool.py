"""The ``web_search`` tool over one search backend, and the choice of that backend from the configuration."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ironhive.adapters.tools.arguments import validate_arguments
from ironhive.adapters.web.duckduckgo import DUCKDUCKGO_URL, DuckDuckGoSearchBackend
from ironhive.adapters.web.http import WebClient
from ironhive.adapters.web.search import (
    SEARCHAPI_URL,
    TAVILY_URL,
    SearchApiSearchBackend,
    SearchBackend,
    TavilySearchBackend,
)
from ironhive.adapters.web.specs import WEB_SEARCH as NAME
from ironhive.adapters.web.specs import WEB_SEARCH_MAX_RESULTS as MAX_RESULTS
from ironhive.adapters.web.specs import web_search_spec
from ironhive.domain.errors import ToolArgumentError
from ironhive.ports.chat import JsonValue, ToolSpec


class WebSearchTool:
    """``web_search(query, max_results)`` over one search backend.

    Args:
        backend: The search service.
        default_max_results: ``webSearch.defaultMaxResults``.
    """

    def __init__(self, backend: SearchBackend, *, default_max_results: int = 10) -> None:
        self._backend = backend
        self._spec = web_search_spec(default_max_results)

    @property
    def spec(self) -> ToolSpec:
        """The tool's name, description and JSON schema."""
        return self._spec

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Search and return ``{"query", "provider", "resultCount", "results": [{"title", "url", "description"}]}``.

        Raises:
            ToolArgumentError: ``query`` is missing or empty.
            ToolError: The search service failed.
        """
        validated = validate_arguments(NAME, self._spec.parameters, arguments)
        query = validated.string("query").strip()
        if not query:
            raise ToolArgumentError(f"Parameter 'query' of tool '{NAME}' is empty", parameter="query")
        limit = min(validated.integer("max_results"), MAX_RESULTS)
        hits = (await self._backend.search(query, limit))[:limit]
        results: list[JsonValue] = [{"title": hit.title, "url": hit.url, "description": hit.snippet} for hit in hits]
        payload: dict[str, JsonValue] = {
            "query": query,
            "provider": self._backend.name,
            "resultCount": len(results),
            "results": results,
        }
        return json.dumps(payload, indent=2, ensure_ascii=False)


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchEndpoints:
    """Where each search service is reached (tests point these at loopback fakes)."""

    duckduckgo: str = DUCKDUCKGO_URL
    tavily: str = TAVILY_URL
    searchapi: str = SEARCHAPI_URL


def select_search_backend(
    web: WebClient,
    *,
    tavily_api_key: str | None = None,
    search_api_key: str | None = None,
    search_api_engine: str = "google",
    duckduckgo_region: str | None = None,
    endpoints: SearchEndpoints | None = None,
) -> SearchBackend:
    """The backend the configuration asks for: Tavily when its key is set, else SearchApi when its key is set, else
    DuckDuckGo (which needs no key).

    Args:
        web: The HTTP client.
        tavily_api_key: ``webSearch.tavilyApiKey`` (for deep research: ``deepResearch.tavilyApiKey`` first).
        search_api_key: ``webSearch.searchApiKey``.
        search_api_engine: ``webSearch.searchApiEngine``.
        duckduckgo_region: ``webSearch.duckDuckGoRegion``.
        endpoints: The services' URLs.

    Returns:
        The backend.
    """
    where = endpoints or SearchEndpoints()
    if tavily_api_key:
        return TavilySearchBackend(web, tavily_api_key, url=where.tavily)
    if search_api_key:
        return SearchApiSearchBackend(web, search_api_key, engine=search_api_engine, url=where.searchapi)
    return DuckDuckGoSearchBackend(web, region=duckduckgo_region, url=where.duckduckgo)
