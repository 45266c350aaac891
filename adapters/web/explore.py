"""The ``explore_site`` tool: a site's robots.txt (rules, ``Sitemap:`` lines) and its sitemap entries."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from urllib.parse import urlsplit

from ironhive.adapters.tools.arguments import validate_arguments
from ironhive.adapters.web.http import WebClient, require_http_url
from ironhive.adapters.web.site import RobotsFile, SitemapEntry, SitemapError, parse_robots, read_sitemap
from ironhive.adapters.web.specs import EXPLORE_SITE as NAME
from ironhive.adapters.web.specs import EXPLORE_SITE_PARAMETERS as PARAMETERS
from ironhive.adapters.web.specs import EXPLORE_SITE_SPEC
from ironhive.domain.errors import ToolError
from ironhive.ports.chat import JsonValue, ToolSpec

ROBOTS_MAX_BYTES = 512 * 1024
SITEMAP_MAX_BYTES = 10 * 1024 * 1024
MAX_RULES_SHOWN = 200


class ExploreSiteTool:
    """Reads ``<origin>/robots.txt`` and the sitemaps it names (``<origin>/sitemap.xml`` when it names none).

    Sitemap indexes are followed breadth-first until ``max_sitemap_entries`` page entries are collected or
    ``max_sitemaps`` files were read. A missing robots.txt is not an error (no rules); an unreachable site is.

    Args:
        web: The HTTP client.
        max_sitemap_entries: The most page entries returned (``webSearch.maxSitemapEntries``).
        max_sitemaps: The most sitemap files read per call.
    """

    def __init__(self, web: WebClient, *, max_sitemap_entries: int = 50, max_sitemaps: int = 20) -> None:
        self._web = web
        self._max_entries = max_sitemap_entries
        self._max_sitemaps = max_sitemaps

    @property
    def spec(self) -> ToolSpec:
        """The tool's name, description and JSON schema."""
        return EXPLORE_SITE_SPEC

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Explore the site; the result is a JSON object (robots rules, sitemap entries, anything that failed).

        Raises:
            ToolArgumentError: ``base_url`` is missing or not an http(s) URL.
            ToolError: The site could not be reached.
        """
        validated = validate_arguments(NAME, PARAMETERS, arguments)
        base_url = require_http_url(validated.string("base_url"), parameter="base_url", tool=NAME)
        parts = urlsplit(base_url)
        origin = f"{parts.scheme.lower()}://{parts.netloc}"
        robots_url = f"{origin}/robots.txt"
        fetched = await self._web.get(robots_url, max_bytes=ROBOTS_MAX_BYTES)
        robots = parse_robots(fetched.text(), robots_url) if fetched.ok else RobotsFile()
        result: dict[str, JsonValue] = {
            "baseUrl": base_url,
            "robots": _robots_json(robots_url, fetched.ok, fetched.status, robots),
        }
        if validated.boolean("include_sitemap", default=True) and self._max_entries > 0:
            result.update(await self._sitemaps(list(robots.sitemaps), f"{origin}/sitemap.xml", robots))
        return json.dumps(result, indent=2, ensure_ascii=False)

    async def _sitemaps(self, listed: list[str], fallback: str, robots: RobotsFile) -> dict[str, JsonValue]:
        guessed = not listed
        queue = deque(listed or [fallback])
        seen: set[str] = set()
        documents: list[JsonValue] = []
        entries: list[SitemapEntry] = []
        errors: list[JsonValue] = []
        truncated = False
        while queue:
            if len(seen) >= self._max_sitemaps:
                truncated = True
                break
            url = queue.popleft()
            if url in seen:
                continue
            seen.add(url)
            try:
                require_http_url(url)
                fetched = await self._web.get(url, max_bytes=SITEMAP_MAX_BYTES)
            except ToolError as exc:
                errors.append(f"{url}: {exc}")
                continue
            if not fetched.ok:
                if not guessed:
                    errors.append(f"{url}: HTTP {fetched.status}")
                continue
            try:
                document = read_sitemap(fetched.body, limit=self._max_entries - len(entries), base_url=fetched.url)
            except SitemapError as exc:
                if not guessed:
                    errors.append(f"{url}: not a sitemap: {exc}")
                continue
            documents.append({"url": url, "type": document.kind, "entries": len(document.entries)})
            entries.extend(document.entries)
            queue.extend(document.children)
            if len(entries) >= self._max_entries:
                truncated = document.more or bool(queue)
                break
            truncated = truncated or document.more  # a file cut short by the size cap or broken midway
        result: dict[str, JsonValue] = {
            "sitemaps": documents,
            "sitemapEntries": [_entry_json(entry, robots) for entry in entries],
            "sitemapEntryCount": len(entries),
            "truncated": truncated,
        }
        if errors:
            result["sitemapErrors"] = errors
        return result


def _robots_json(url: str, found: bool, status: int, robots: RobotsFile) -> dict[str, JsonValue]:
    groups: list[JsonValue] = []
    shown = 0
    omitted = 0
    for group in robots.groups:
        room = max(0, MAX_RULES_SHOWN - shown)
        disallow: list[JsonValue] = list(group.disallow[:room])
        allow: list[JsonValue] = list(group.allow[: max(0, room - len(disallow))])
        shown += len(disallow) + len(allow)
        omitted += len(group.disallow) + len(group.allow) - len(disallow) - len(allow)
        item: dict[str, JsonValue] = {"userAgents": list(group.user_agents), "disallow": disallow, "allow": allow}
        if group.crawl_delay is not None:
            item["crawlDelay"] = group.crawl_delay
        groups.append(item)
    robots_json: dict[str, JsonValue] = {
        "url": url,
        "found": found,
        "status": status,
        "sitemapUrls": list(robots.sitemaps),
        "groups": groups,
    }
    if omitted:
        robots_json["rulesOmitted"] = omitted
    return robots_json


def _entry_json(entry: SitemapEntry, robots: RobotsFile) -> dict[str, JsonValue]:
    item: dict[str, JsonValue] = {"url": entry.url}
    if not robots.can_fetch(entry.url):
        item["robotsDisallowed"] = True  # robots.txt asks ironhive not to fetch it
    if entry.last_modified is not None:
        item["lastModified"] = entry.last_modified
    if entry.change_frequency is not None:
        item["changeFrequency"] = entry.change_frequency
    if entry.priority is not None:
        item["priority"] = entry.priority
    return item
