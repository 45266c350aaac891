"""The ``web_search`` tool, and the factory building the web tools from the ``webSearch``/``deepResearch`` sections."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ironhive.adapters.tools.arguments import object_schema, validate_arguments
from ironhive.adapters.web.duckduckgo import DUCKDUCKGO_URL, DuckDuckGoSearchBackend
from ironhive.adapters.web.explore import ExploreSiteTool
from ironhive.adapters.web.http import WebClient
from ironhive.adapters.web.research import DeepResearchTool
from ironhive.adapters.web.search import (
    SEARCHAPI_URL,
    TAVILY_URL,
    SearchApiSearchBackend,
    SearchBackend,
    TavilySearchBackend,
)
from ironhive.domain.errors import ToolArgumentError
from ironhive.ports.chat import ChatClient, JsonValue, ToolSpec
from ironhive.ports.tools import Tool

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import DeepResearchSection, WebSearchSection

NAME = "web_search"
MAX_RESULTS = 50
DESCRIPTION = (
    "Search the web. Returns result titles, URLs and short descriptions as JSON. Use it for current information or "
    "to find pages about a topic; read a page's full text with another tool when you need it."
)


def _parameters(default_max_results: int) -> dict[str, JsonValue]:
    return object_schema(
        {
            "query": {"type": "string", "description": "What to search for."},
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "default": default_max_results,
                "description": f"The most results to return (default {default_max_results}, at most {MAX_RESULTS}).",
            },
        },
        required=["query"],
    )


class WebSearchTool:
    """``web_search(query, max_results)`` over one search backend.

    Args:
        backend: The search service.
        default_max_results: ``webSearch.defaultMaxResults``.
    """

    def __init__(self, backend: SearchBackend, *, default_max_results: int = 10) -> None:
        self._backend = backend
        self._parameters = _parameters(default_max_results)
        self._spec = ToolSpec(name=NAME, description=DESCRIPTION, parameters=self._parameters)

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
        validated = validate_arguments(NAME, self._parameters, arguments)
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


def build_web_tools(
    web_search: WebSearchSection,
    deep_research: DeepResearchSection,
    *,
    web: WebClient | None = None,
    research_client: ChatClient | None = None,
    endpoints: SearchEndpoints | None = None,
) -> list[Tool]:
    """The web tools the configuration turns on.

    ``webSearch.enabled`` adds ``web_search`` and ``explore_site``; ``deepResearch.enabled`` adds ``deep_research``
    when a ``research_client`` is given (the client of ``deepResearch.provider``, or of the current provider).

    Args:
        web_search: The ``webSearch`` section.
        deep_research: The ``deepResearch`` section.
        web: The HTTP client (one that opens a session per request when omitted).
        research_client: The model that steers deep research and writes its report.
        endpoints: The search services' URLs.

    Returns:
        The tools, in the order web_search, explore_site, deep_research.
    """
    client = web or WebClient()
    tools: list[Tool] = []
    if web_search.enabled:
        backend = select_search_backend(
            client,
            tavily_api_key=web_search.tavily_api_key,
            search_api_key=web_search.search_api_key,
            search_api_engine=web_search.search_api_engine,
            duckduckgo_region=web_search.duck_duck_go_region,
            endpoints=endpoints,
        )
        tools.append(WebSearchTool(backend, default_max_results=web_search.default_max_results))
        tools.append(ExploreSiteTool(client, max_sitemap_entries=web_search.max_sitemap_entries))
    if deep_research.enabled and research_client is not None:
        research_backend = select_search_backend(
            client,
            tavily_api_key=deep_research.tavily_api_key or web_search.tavily_api_key,
            search_api_key=web_search.search_api_key,
            search_api_engine=web_search.search_api_engine,
            duckduckgo_region=web_search.duck_duck_go_region,
            endpoints=endpoints,
        )
        tools.append(
            DeepResearchTool(
                research_backend,
                research_client,
                web=client,
                max_iterations=deep_research.max_iterations,
                model=deep_research.model,
            )
        )
    return tools
