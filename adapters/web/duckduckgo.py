"""DuckDuckGo's HTML results page as a search backend (no API key): the request and the page parser."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import parse_qs, urlsplit

from ironhive.adapters.web.http import WebClient
from ironhive.adapters.web.search import SearchHit
from ironhive.domain.errors import ToolError

DUCKDUCKGO_URL = "https://html.duckduckgo.com/html/"
"""The HTML (JavaScript-free) results page."""


class DuckDuckGoSearchBackend:
    """Searches by reading DuckDuckGo's HTML results page (``GET …/html/?q=<query>[&kl=<region>]``).

    The page is unofficial and rate-limited: when DuckDuckGo answers with its bot check instead of results, the
    search fails with a ToolError suggesting a keyed backend.

    Args:
        web: The HTTP client.
        region: DuckDuckGo's region code (``kl``), e.g. ``wt-wt`` or ``kr-kr``.
        url: The results page (injectable for tests).
    """

    name = "DuckDuckGo"

    def __init__(self, web: WebClient, *, region: str | None = None, url: str = DUCKDUCKGO_URL) -> None:
        self._web = web
        self._region = region
        self._url = url

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Return up to ``max_results`` organic results (ads left out)."""
        params = {"q": query}
        if self._region:
            params["kl"] = self._region
        page = await self._web.get(self._url, params=params, headers={"Accept": "text/html"}, label="DuckDuckGo")
        text = page.text()
        if not page.ok and page.status != 202:
            raise ToolError(f"DuckDuckGo search failed: HTTP {page.status}.")
        hits = parse_duckduckgo_html(text)
        if not hits and ("anomaly" in text or page.status == 202):
            raise ToolError(
                "DuckDuckGo answered with a bot check instead of results (too many searches). Try again later, or "
                "configure webSearch.tavilyApiKey or webSearch.searchApiKey for a keyed search backend."
            )
        return hits[:max_results]


def parse_duckduckgo_html(html: str) -> list[SearchHit]:
    """The organic results of a DuckDuckGo HTML results page, in page order.

    Result links point at DuckDuckGo's redirect (``//duckduckgo.com/l/?uddg=<target>``); the target is decoded.
    Ads (``result--ad`` blocks, ``y.js`` links) and links that are not http(s) are left out; duplicates are dropped.
    """
    parser = _ResultsParser()
    parser.feed(html)
    parser.close()
    seen: set[str] = set()
    hits: list[SearchHit] = []
    for hit in parser.hits:
        if hit.url not in seen and hit.title:
            seen.add(hit.url)
            hits.append(hit)
    return hits


class _ResultsParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hits: list[SearchHit] = []
        self._in_ad = False
        self._url: str | None = None
        self._title: list[str] = []
        self._snippet: list[str] = []
        self._capture: list[str] | None = None
        self._capture_tag = ""
        self._capture_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = (values.get("class") or "").split()
        if self._capture is not None:
            if tag == self._capture_tag:
                self._capture_depth += 1
            return
        if "result" in classes:
            self._flush()
            self._in_ad = "result--ad" in classes
        elif tag == "a" and "result__a" in classes:
            self._flush()
            target = None if self._in_ad else _target(values.get("href") or "")
            if target is not None:
                self._url = target
                self._start(self._title, tag)
        elif "result__snippet" in classes and self._url is not None:
            self._start(self._snippet, tag)

    def handle_endtag(self, tag: str) -> None:
        if self._capture is None or tag != self._capture_tag:
            return
        if self._capture_depth:
            self._capture_depth -= 1
        else:
            self._capture = None

    def handle_data(self, data: str) -> None:
        if self._capture is not None:
            self._capture.append(data)

    def close(self) -> None:
        super().close()
        self._flush()

    def _start(self, target: list[str], tag: str) -> None:
        self._capture = target
        self._capture_tag = tag
        self._capture_depth = 0

    def _flush(self) -> None:
        if self._url is not None:
            title = " ".join("".join(self._title).split())
            snippet = " ".join("".join(self._snippet).split())
            self.hits.append(SearchHit(title=title, url=self._url, snippet=snippet))
        self._url = None
        self._title = []
        self._snippet = []
        self._capture = None


def _target(href: str) -> str | None:
    """The real destination of a result link, or ``None`` for ads and non-http(s) links."""
    link = "https:" + href if href.startswith("//") else href
    parts = urlsplit(link)
    if parts.path.endswith("/y.js"):
        return None
    if parts.path.startswith("/l/"):
        decoded = parse_qs(parts.query).get("uddg")
        if not decoded:
            return None
        link = decoded[0]
        parts = urlsplit(link)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return link
