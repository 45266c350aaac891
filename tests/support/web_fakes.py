"""WebFake: one 127.0.0.1 server playing DuckDuckGo's HTML page, Tavily, SearchApi and an ordinary website, for tests.

Each search service answers in its real format (DuckDuckGo's results markup with redirect links and an ad; Tavily's
``results[]`` JSON; SearchApi's ``organic_results`` JSON) from the same table of results per query, and every
request is recorded.
"""

from __future__ import annotations

import asyncio
import gzip
import html
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any
from urllib.parse import quote

from aiohttp import web

from tests.support.loopback_server import start_site

TAVILY_KEY = "tvly-test-key"
SEARCHAPI_KEY = "searchapi-test-key"


@dataclass(frozen=True, kw_only=True)
class Result:
    """One search result the fake services return."""

    title: str
    url: str
    snippet: str


@dataclass(frozen=True, kw_only=True)
class RecordedWebRequest:
    """A request the fake received."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True, kw_only=True)
class Page:
    """A resource of the fake website."""

    body: bytes
    content_type: str | None = "text/html"
    status: int = 200
    delay_seconds: float = 0.0


@dataclass(kw_only=True)
class WebFake:
    """The loopback server. Fill ``results`` (query → results) and ``pages`` (path → page) before or during a test.

    ``duckduckgo_challenge`` makes the DuckDuckGo page answer with its bot check (HTTP 202) instead of results.
    """

    results: dict[str, list[Result]] = field(default_factory=dict)
    pages: dict[str, Page] = field(default_factory=dict)
    duckduckgo_challenge: bool = False
    requests: list[RecordedWebRequest] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    _port: int = 0

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._port}"

    def url(self, path: str) -> str:
        """An absolute URL on the fake."""
        return self.base_url + path

    def add_page(
        self,
        path: str,
        body: str | bytes,
        content_type: str | None = "text/html",
        status: int = 200,
        delay: float = 0.0,
    ) -> str:
        """Serve ``body`` at ``path`` (after ``delay`` seconds; no Content-Type for ``None``); returns its URL."""
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.pages[path] = Page(body=data, content_type=content_type, status=status, delay_seconds=delay)
        return self.url(path)

    def paths(self, method: str | None = None) -> list[str]:
        """The paths requested so far (of one method when given)."""
        return [request.path for request in self.requests if method is None or request.method == method]

    async def __aenter__(self) -> WebFake:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner, self._port = await start_site(app)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            RecordedWebRequest(
                method=request.method,
                path=request.path,
                query=dict(request.query),
                headers=dict(request.headers),
                body=body,
            )
        )
        if request.path == "/html/" and request.method == "GET":
            return self._duckduckgo(request)
        if request.path == "/search" and request.method == "POST":
            return self._tavily(request, body)
        if request.path == "/api/v1/search" and request.method == "GET":
            return self._searchapi(request)
        page = self.pages.get(request.path)
        if page is None:
            return web.Response(
                status=404, text="<html><body><h1>Not Found</h1></body></html>", content_type="text/html"
            )
        if page.delay_seconds:
            await asyncio.sleep(page.delay_seconds)
        headers = {} if page.content_type is None else {"Content-Type": page.content_type}
        return web.Response(status=page.status, body=page.body, headers=headers)

    def _duckduckgo(self, request: web.Request) -> web.Response:
        if self.duckduckgo_challenge:
            return web.Response(status=202, text=DUCKDUCKGO_CHALLENGE, content_type="text/html")
        query = request.query.get("q", "")
        return web.Response(text=duckduckgo_html(query, self.results.get(query, [])), content_type="text/html")

    def _tavily(self, request: web.Request, body: bytes) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {TAVILY_KEY}":
            return web.json_response({"detail": {"error": "Unauthorized: missing or invalid API key."}}, status=401)
        payload = json.loads(body)
        query = payload["query"]
        found = self.results.get(query, [])[: payload.get("max_results", 5)]
        return web.json_response(tavily_json(query, found))

    def _searchapi(self, request: web.Request) -> web.Response:
        if request.query.get("api_key") != SEARCHAPI_KEY:
            return web.json_response(
                {"error": "Invalid API key. Your API key should be here: https://www.searchapi.io/api_tokens"},
                status=401,
            )
        query = request.query.get("q", "")
        return web.json_response(
            searchapi_json(query, request.query.get("engine", "google"), self.results.get(query, []))
        )


def duckduckgo_html(query: str, results: list[Result]) -> str:
    """DuckDuckGo's HTML results page for ``results``: redirect links (``uddg``), result URLs, snippets and one ad."""
    blocks = [
        """<div class="result results_links results_links_deep result--ad  result--ad--small">
  <div class="links_main links_deep result__body">
    <h2 class="result__title">
      <a rel="nofollow" class="result__a"
         href="https://duckduckgo.com/y.js?ad_domain=ads.example&amp;ad_provider=bingv7aa&amp;ad_type=txad&amp;u3=x"
      >Sponsored: Buy <b>things</b></a>
    </h2>
    <a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=ads.example">An advertisement.</a>
  </div>
</div>"""
    ]
    for result in results:
        redirect = f"//duckduckgo.com/l/?uddg={quote(result.url, safe='')}&amp;rut=4d1f0c0e2a6b"
        display = result.url.split("://", 1)[-1]
        blocks.append(
            f"""<div class="result results_links results_links_deep web-result ">
  <div class="links_main links_deep result__body"> <!-- This is the visible part -->
    <h2 class="result__title">
      <a rel="nofollow" class="result__a" href="{redirect}">{_bold(result.title, query)}</a>
    </h2>
    <div class="result__extras">
      <div class="result__extras__url">
        <span class="result__icon"><a rel="nofollow" href="{redirect}"><img class="result__icon__img" width="16"
          height="16" alt="" src="//external-content.duckduckgo.com/ip3/example.ico" name="i15" /></a></span>
        <a class="result__url" href="{redirect}">{html.escape(display)}</a>
      </div>
    </div>
    <a class="result__snippet" href="{redirect}">{_bold(result.snippet, query)}</a>
    <div class="clear"></div>
  </div>
</div>"""
        )
    if not results:
        blocks = ['<div class="no-results">No results.</div>']
    return f"""<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">
<html>
<head>
  <meta http-equiv="content-type" content="text/html; charset=UTF-8">
  <title>{html.escape(query)} at DuckDuckGo</title>
  <link rel="stylesheet" href="/dist/h.css" type="text/css">
</head>
<body>
  <div id="links_wrapper"><div class="serp__results"><div id="links" class="results">
{chr(10).join(blocks)}
  </div></div></div>
  <div class="nav-link"><form action="/html/" method="post">
    <input type="submit" class='btn btn--alt' value="Next" /></form></div>
</body>
</html>"""


DUCKDUCKGO_CHALLENGE = """<html><head><title>DuckDuckGo</title></head><body>
<form id="challenge-form" action="/anomaly.js?sv=html&amp;cc=botnet" method="POST">
<div class="anomaly-modal__mask">Unfortunately, bots use DuckDuckGo too. Please complete the following challenge.</div>
</form></body></html>"""


def tavily_json(query: str, results: list[Result]) -> dict[str, Any]:
    """Tavily's ``/search`` answer."""
    return {
        "query": query,
        "follow_up_questions": None,
        "answer": None,
        "images": [],
        "results": [
            {"url": item.url, "title": item.title, "content": item.snippet, "score": 0.9 - n / 10, "raw_content": None}
            for n, item in enumerate(results)
        ],
        "response_time": "1.12",
        "request_id": "0f5e7c8a-1b2c-4d5e-8f9a-0b1c2d3e4f5a",
    }


def searchapi_json(query: str, engine: str, results: list[Result]) -> dict[str, Any]:
    """SearchApi's ``/api/v1/search`` answer (Google engine shape)."""
    return {
        "search_metadata": {
            "id": "search_8k2Jd0mQxYz",
            "status": "Success",
            "created_at": "2026-01-01T00:00:00Z",
            "request_time_taken": 1.02,
            "parsing_time_taken": 0.03,
            "total_time_taken": 1.05,
            "request_url": f"https://www.google.com/search?q={quote(query)}&oq={quote(query)}&gl=us&hl=en",
            "html_url": "https://www.searchapi.io/api/v1/searches/search_8k2Jd0mQxYz.html",
            "json_url": "https://www.searchapi.io/api/v1/searches/search_8k2Jd0mQxYz",
        },
        "search_parameters": {"engine": engine, "q": query, "device": "desktop", "google_domain": "google.com"},
        "search_information": {"query_displayed": query, "total_results": 1230000, "time_taken_displayed": 0.31},
        "organic_results": [
            {
                "position": n + 1,
                "title": item.title,
                "link": item.url,
                "source": item.url.split("/")[2],
                "domain": item.url.split("/")[2],
                "displayed_link": item.url,
                "snippet": item.snippet,
                "snippet_highlighted_words": [query],
                "favicon": "data:image/png;base64,iVBORw0KGgo=",
            }
            for n, item in enumerate(results)
        ],
        "related_searches": [{"query": f"{query} tutorial", "link": "https://www.google.com/search?q=x"}],
    }


def gzipped(text: str) -> bytes:
    """``text`` gzip-compressed (a ``.xml.gz`` sitemap)."""
    return gzip.compress(text.encode("utf-8"))


def _bold(text: str, query: str) -> str:
    escaped = html.escape(text)
    for word in query.split():
        escaped = escaped.replace(html.escape(word), f"<b>{html.escape(word)}</b>")
    return escaped
