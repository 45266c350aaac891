"""The web tools the ``webSearch``/``deepResearch`` sections turn on, each built (and imported) at its first call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ironhive.adapters.tools.deferred import DeferredTool
from ironhive.adapters.web.specs import DEEP_RESEARCH_SPEC, EXPLORE_SITE_SPEC, web_search_spec

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import DeepResearchSection, WebSearchSection
    from ironhive.adapters.web.http import WebClient
    from ironhive.adapters.web.search_tool import SearchEndpoints
    from ironhive.ports.chat import ChatClient
    from ironhive.ports.tools import Tool


def build_web_tools(
    web_search: WebSearchSection,
    deep_research: DeepResearchSection,
    *,
    web: WebClient | None = None,
    research_client: ChatClient | None = None,
    endpoints: SearchEndpoints | None = None,
) -> list[Tool]:
    """The web tools the configuration turns on, offered by their specs: each tool's implementation (its search
    backend, HTML and XML parsers, HTTP client) is imported and built at its first call (:class:`DeferredTool`).

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

    def http() -> WebClient:
        from ironhive.adapters.web.http import WebClient

        return web or WebClient()

    def search_tool() -> Tool:
        from ironhive.adapters.web.search_tool import WebSearchTool, select_search_backend

        backend = select_search_backend(
            http(),
            tavily_api_key=web_search.tavily_api_key,
            search_api_key=web_search.search_api_key,
            search_api_engine=web_search.search_api_engine,
            duckduckgo_region=web_search.duck_duck_go_region,
            endpoints=endpoints,
        )
        return WebSearchTool(backend, default_max_results=web_search.default_max_results)

    def explore_tool() -> Tool:
        from ironhive.adapters.web.explore import ExploreSiteTool

        return ExploreSiteTool(http(), max_sitemap_entries=web_search.max_sitemap_entries)

    def research_tool(client: ChatClient) -> Tool:
        from ironhive.adapters.web.research import DeepResearchTool
        from ironhive.adapters.web.search_tool import select_search_backend

        web_client = http()
        backend = select_search_backend(
            web_client,
            tavily_api_key=deep_research.tavily_api_key or web_search.tavily_api_key,
            search_api_key=web_search.search_api_key,
            search_api_engine=web_search.search_api_engine,
            duckduckgo_region=web_search.duck_duck_go_region,
            endpoints=endpoints,
        )
        return DeepResearchTool(
            backend, client, web=web_client, max_iterations=deep_research.max_iterations, model=deep_research.model
        )

    tools: list[Tool] = []
    if web_search.enabled:
        tools.append(DeferredTool(web_search_spec(web_search.default_max_results), search_tool))
        tools.append(DeferredTool(EXPLORE_SITE_SPEC, explore_tool))
    if deep_research.enabled and research_client is not None:
        tools.append(DeferredTool(DEEP_RESEARCH_SPEC, lambda: research_tool(research_client)))
    return tools
