"""The web tools' names, descriptions and parameter schemas: what the model is offered before any of them runs."""

from __future__ import annotations

from ironhive.adapters.tools.arguments import object_schema
from ironhive.ports.chat import JsonValue, ToolSpec

WEB_SEARCH = "web_search"
WEB_SEARCH_MAX_RESULTS = 50
WEB_SEARCH_DESCRIPTION = (
    "Search the web. Returns result titles, URLs and short descriptions as JSON. Use it for current information or "
    "to find pages about a topic; read a page's full text with another tool when you need it."
)


def _web_search_parameters(default_max_results: int) -> dict[str, JsonValue]:
    """``web_search``'s parameters, with ``webSearch.defaultMaxResults`` as ``max_results``' default."""
    return object_schema(
        {
            "query": {"type": "string", "description": "What to search for."},
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "default": default_max_results,
                "description": (
                    f"The most results to return (default {default_max_results}, at most {WEB_SEARCH_MAX_RESULTS})."
                ),
            },
        },
        required=["query"],
    )


def web_search_spec(default_max_results: int) -> ToolSpec:
    """``web_search`` as the model sees it."""
    return ToolSpec(
        name=WEB_SEARCH, description=WEB_SEARCH_DESCRIPTION, parameters=_web_search_parameters(default_max_results)
    )


EXPLORE_SITE = "explore_site"
EXPLORE_SITE_DESCRIPTION = (
    "Explore a website's structure: reads its robots.txt (crawl rules and Sitemap: lines) and its sitemaps "
    "(sitemap indexes included), and returns the site's page URLs. Use it to find where content lives on a site "
    "before reading pages."
)
EXPLORE_SITE_PARAMETERS = object_schema(
    {
        "base_url": {"type": "string", "description": "The site's address, e.g. https://example.com"},
        "include_sitemap": {
            "type": "boolean",
            "description": "Also read the sitemaps and list their page URLs (default true).",
            "default": True,
        },
    },
    required=["base_url"],
)
EXPLORE_SITE_SPEC = ToolSpec(
    name=EXPLORE_SITE, description=EXPLORE_SITE_DESCRIPTION, parameters=EXPLORE_SITE_PARAMETERS
)

DEEP_RESEARCH = "deep_research"
RESEARCH_DEPTHS = ("quick", "standard", "comprehensive", "deep")
DEEP_RESEARCH_DESCRIPTION = (
    "Research a question on the web in several rounds: search, read the top pages, refine the query, and finally "
    "write a report with numbered sources. Slower than web_search; use it for questions that need several sources. "
    "depth: quick (1 round), standard (2), comprehensive (4), deep (the configured maximum)."
)
DEEP_RESEARCH_PARAMETERS = object_schema(
    {
        "query": {"type": "string", "description": "The research question."},
        "depth": {
            "type": "string",
            "enum": list(RESEARCH_DEPTHS),
            "default": "standard",
            "description": "How thorough: quick, standard, comprehensive or deep.",
        },
    },
    required=["query"],
)
DEEP_RESEARCH_SPEC = ToolSpec(
    name=DEEP_RESEARCH, description=DEEP_RESEARCH_DESCRIPTION, parameters=DEEP_RESEARCH_PARAMETERS
)
