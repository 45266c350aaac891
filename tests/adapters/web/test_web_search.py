"""web_search over DuckDuckGo's HTML page, Tavily and SearchApi, each faked on loopback in its real format."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator

import pytest

from ironhive.adapters.config.schema import DeepResearchSection, WebSearchSection
from ironhive.adapters.scripted.client import ScriptedChatClient
from ironhive.adapters.web.duckduckgo import DuckDuckGoSearchBackend, parse_duckduckgo_html
from ironhive.adapters.web.http import WebClient, require_http_url
from ironhive.adapters.web.search import SearchApiSearchBackend, SearchHit, TavilySearchBackend
from ironhive.adapters.web.search_tool import SearchEndpoints, WebSearchTool, select_search_backend
from ironhive.adapters.web.tools import build_web_tools
from ironhive.domain.errors import ToolArgumentError, ToolError
from tests.support.web_fakes import SEARCHAPI_KEY, TAVILY_KEY, Result, WebFake, duckduckgo_html

RESULTS = [
    Result(
        title="asyncio — Asynchronous I/O",
        url="https://docs.python.org/3/library/asyncio.html",
        snippet="asyncio is a library to write concurrent code.",
    ),
    Result(
        title="Real Python: Async IO",
        url="https://realpython.com/async-io-python/?utm=x&y=1",
        snippet="A walkthrough of async IO in Python.",
    ),
    Result(title="PEP 492", url="https://peps.python.org/pep-0492/", snippet="Coroutines with async and await syntax."),
]


@pytest.fixture
async def fake() -> AsyncIterator[WebFake]:
    async with WebFake(results={"python asyncio": list(RESULTS)}) as server:
        yield server


def endpoints(fake: WebFake) -> SearchEndpoints:
    return SearchEndpoints(
        duckduckgo=fake.url("/html/"), tavily=fake.url("/search"), searchapi=fake.url("/api/v1/search")
    )


def hits(results: list[Result]) -> list[SearchHit]:
    return [SearchHit(title=item.title, url=item.url, snippet=item.snippet) for item in results]


# --- DuckDuckGo ------------------------------------------------------------------------------------------------------


def test_the_duckduckgo_page_parser_decodes_redirects_and_skips_ads() -> None:
    page = duckduckgo_html("python asyncio", RESULTS)
    assert parse_duckduckgo_html(page) == hits(RESULTS)
    assert parse_duckduckgo_html(duckduckgo_html("nothing", [])) == []


def test_the_parser_keeps_direct_links_and_drops_non_http_ones() -> None:
    page = """
    <div class="result results_links web-result"><h2 class="result__title">
      <a class="result__a" href="https://example.org/a">Direct <b>link</b></a></h2>
      <div class="result__snippet">Snippet <b>one</b>
        <div>nested</div> end</div></div>
    <div class="result results_links web-result"><h2 class="result__title">
      <a class="result__a" href="//duckduckgo.com/l/?uddg=javascript%3Aalert(1)">Bad</a></h2></div>
    <div class="result results_links web-result"><h2 class="result__title">
      <a class="result__a" href="/l/?uddg=https%3A%2F%2Fexample.org%2Fa">Duplicate</a></h2></div>
    """
    assert parse_duckduckgo_html(page) == [
        SearchHit(title="Direct link", url="https://example.org/a", snippet="Snippet one nested end")
    ]


async def test_duckduckgo_backend_reads_the_results_page(fake: WebFake) -> None:
    backend = DuckDuckGoSearchBackend(WebClient(), region="kr-kr", url=fake.url("/html/"))
    assert await backend.search("python asyncio", 2) == hits(RESULTS[:2])
    request = fake.requests[-1]
    assert (request.method, request.path, request.query) == ("GET", "/html/", {"q": "python asyncio", "kl": "kr-kr"})
    assert "ironhive" in request.headers["User-Agent"]


async def test_duckduckgo_without_results_is_an_empty_list(fake: WebFake) -> None:
    assert await DuckDuckGoSearchBackend(WebClient(), url=fake.url("/html/")).search("unknown words", 5) == []
    assert "kl" not in fake.requests[-1].query


async def test_duckduckgo_bot_check_is_a_tool_error_suggesting_a_keyed_backend(fake: WebFake) -> None:
    fake.duckduckgo_challenge = True
    with pytest.raises(ToolError, match=r"^DuckDuckGo answered with a bot check .* webSearch\.tavilyApiKey"):
        await DuckDuckGoSearchBackend(WebClient(), url=fake.url("/html/")).search("python asyncio", 5)


# --- Tavily ----------------------------------------------------------------------------------------------------------


async def test_tavily_posts_the_query_with_a_bearer_key(fake: WebFake) -> None:
    backend = TavilySearchBackend(WebClient(), TAVILY_KEY, url=fake.url("/search"))
    assert await backend.search("python asyncio", 2) == hits(RESULTS[:2])
    request = fake.requests[-1]
    assert (request.method, request.path) == ("POST", "/search")
    assert request.headers["Authorization"] == f"Bearer {TAVILY_KEY}"
    assert json.loads(request.body) == {
        "query": "python asyncio",
        "max_results": 2,
        "search_depth": "basic",
        "include_answer": False,
        "include_raw_content": False,
    }


async def test_tavily_caps_max_results_at_twenty(fake: WebFake) -> None:
    await TavilySearchBackend(WebClient(), TAVILY_KEY, url=fake.url("/search")).search("python asyncio", 50)
    assert json.loads(fake.requests[-1].body)["max_results"] == 20


async def test_a_rejected_tavily_key_reports_tavilys_message_and_never_the_key(fake: WebFake) -> None:
    backend = TavilySearchBackend(WebClient(), "tvly-wrong-secret", url=fake.url("/search"))
    with pytest.raises(ToolError) as raised:
        await backend.search("python asyncio", 5)
    assert str(raised.value) == "Tavily search failed: HTTP 401: Unauthorized: missing or invalid API key."
    assert "tvly-wrong-secret" not in str(raised.value)


# --- SearchApi -------------------------------------------------------------------------------------------------------


async def test_searchapi_sends_engine_query_and_key(fake: WebFake) -> None:
    backend = SearchApiSearchBackend(WebClient(), SEARCHAPI_KEY, engine="bing", url=fake.url("/api/v1/search"))
    assert await backend.search("python asyncio", 3) == hits(RESULTS)
    request = fake.requests[-1]
    assert (request.method, request.path) == ("GET", "/api/v1/search")
    assert request.query == {"engine": "bing", "q": "python asyncio", "api_key": SEARCHAPI_KEY, "num": "3"}


async def test_a_rejected_searchapi_key_never_appears_in_the_error(fake: WebFake) -> None:
    backend = SearchApiSearchBackend(WebClient(), "sk-wrong-secret", url=fake.url("/api/v1/search"))
    with pytest.raises(ToolError) as raised:
        await backend.search("python asyncio", 5)
    assert str(raised.value).startswith("SearchApi search failed: HTTP 401: Invalid API key.")
    assert "sk-wrong-secret" not in str(raised.value)


# --- the tool and the backend choice ---------------------------------------------------------------------------------


async def test_web_search_tool_returns_json_results(fake: WebFake) -> None:
    tool = WebSearchTool(DuckDuckGoSearchBackend(WebClient(), url=fake.url("/html/")), default_max_results=2)
    assert tool.spec.name == "web_search"
    assert json.loads(await tool.invoke({"query": "python asyncio"})) == {
        "query": "python asyncio",
        "provider": "DuckDuckGo",
        "resultCount": 2,
        "results": [{"title": item.title, "url": item.url, "description": item.snippet} for item in RESULTS[:2]],
    }
    result = json.loads(await tool.invoke({"query": "python asyncio", "maxResults": "1"}))
    assert [item["url"] for item in result["results"]] == [RESULTS[0].url]


async def test_web_search_tool_rejects_a_missing_or_empty_query(fake: WebFake) -> None:
    tool = WebSearchTool(DuckDuckGoSearchBackend(WebClient(), url=fake.url("/html/")))
    with pytest.raises(ToolArgumentError, match=r"required parameter 'query'"):
        await tool.invoke({})
    with pytest.raises(ToolArgumentError, match=r"is empty"):
        await tool.invoke({"query": "  "})
    with pytest.raises(ToolArgumentError, match=r"must be at least 1"):
        await tool.invoke({"query": "x", "max_results": 0})
    assert fake.requests == []


@pytest.mark.parametrize(
    ("keys", "provider"),
    [
        ({}, "DuckDuckGo"),
        ({"searchApiKey": SEARCHAPI_KEY}, "SearchApi"),
        ({"tavilyApiKey": TAVILY_KEY, "searchApiKey": SEARCHAPI_KEY}, "Tavily"),
    ],
)
async def test_configuration_chooses_the_backend(fake: WebFake, keys: dict[str, str], provider: str) -> None:
    section = WebSearchSection.model_validate(keys)
    tools = build_web_tools(section, DeepResearchSection(), endpoints=endpoints(fake))
    assert [tool.spec.name for tool in tools] == ["web_search", "explore_site"]
    result = json.loads(await tools[0].invoke({"query": "python asyncio"}))
    assert result["provider"] == provider
    assert result["resultCount"] == 3


def test_deep_research_needs_its_section_and_a_model_and_web_search_can_be_off() -> None:
    on = DeepResearchSection.model_validate({"enabled": True})
    assert [tool.spec.name for tool in build_web_tools(WebSearchSection(), on)] == ["web_search", "explore_site"]
    off = WebSearchSection.model_validate({"enabled": False})
    tools = build_web_tools(off, on, research_client=ScriptedChatClient())
    assert [tool.spec.name for tool in tools] == ["deep_research"]
    assert build_web_tools(off, DeepResearchSection(), research_client=ScriptedChatClient()) == []


def test_select_search_backend_prefers_tavily_then_searchapi() -> None:
    web = WebClient()
    assert select_search_backend(web).name == "DuckDuckGo"
    assert select_search_backend(web, search_api_key="k").name == "SearchApi"
    assert select_search_backend(web, tavily_api_key="t", search_api_key="k").name == "Tavily"


# --- the HTTP client -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.org/x", "gopher://h/", "example.org", "http://"])
async def test_only_http_and_https_urls_are_fetched(url: str) -> None:
    with pytest.raises(ToolError, match=r"^Refused to fetch: "):
        await WebClient().get(url)
    with pytest.raises(ToolArgumentError, match=r"^Parameter 'base_url' of tool 'explore_site': "):
        require_http_url(url, parameter="base_url", tool="explore_site")


async def test_an_unreachable_host_is_a_tool_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ToolError, match=rf"^http://127\.0\.0\.1:{port}/x: cannot connect to 127\.0\.0\.1:{port}"):
        await WebClient().get(f"http://127.0.0.1:{port}/x?key=secret")


async def test_a_slow_answer_times_out(fake: WebFake) -> None:
    fake.add_page("/slow", "late", delay=0.5)
    with pytest.raises(ToolError, match=r"^DuckDuckGo: no answer within 0\.1 seconds\.$"):
        await WebClient(timeout_seconds=0.1).get(fake.url("/slow"), label="DuckDuckGo")


async def test_bodies_are_capped_and_a_shared_session_is_reused(fake: WebFake) -> None:
    fake.add_page("/big", "x" * 300_000, content_type="text/plain")
    async with WebClient(max_bytes=1000) as web:
        first = await web.get(fake.url("/big"))
        second = await web.get(fake.url("/big"), max_bytes=200_000)
    assert (len(first.body), first.truncated) == (1000, True)
    assert (len(second.body), second.truncated) == (200_000, True)
    assert first.content_type == "text/plain"
