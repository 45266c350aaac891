"""A site's map: robots.txt (protego's decisions, its groups, ``Sitemap:`` lines) and sitemaps (url sets, indexes)."""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal
from urllib.parse import urljoin
from xml.etree.ElementTree import Element, ParseError, XMLPullParser

if TYPE_CHECKING:
    from protego import Protego

_DECLARATIONS = re.compile(rb"<!(DOCTYPE|ENTITY)", re.IGNORECASE)


ROBOTS_AGENT = "ironhive"
"""The product token robots.txt groups are matched against (``User-agent: ironhive``)."""


@dataclass(kw_only=True, slots=True)
class RobotsGroup:
    """One group of robots.txt as written: the user agents it names and their rules (for showing them)."""

    user_agents: list[str] = field(default_factory=list)
    disallow: list[str] = field(default_factory=list)
    allow: list[str] = field(default_factory=list)
    crawl_delay: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class RobotsFile:
    """A parsed robots.txt: its groups as written, its sitemaps, and the decisions of protego's RFC 9309 matcher."""

    sitemaps: tuple[str, ...] = ()
    groups: tuple[RobotsGroup, ...] = ()
    rules: Protego | None = field(default=None, repr=False, compare=False)

    def can_fetch(self, url: str, user_agent: str = ROBOTS_AGENT) -> bool:
        """Whether the rules let ``user_agent`` fetch ``url``: the most specific group naming the agent (else ``*``),
        and in it the longest matching rule (``*`` and ``$`` patterns included), ``Allow`` winning a tie. No rules
        (no robots.txt) allow everything."""
        return self.rules is None or self.rules.can_fetch(url, user_agent)

    def crawl_delay(self, user_agent: str = ROBOTS_AGENT) -> float | None:
        """The seconds ``user_agent`` should wait between requests, if its group says."""
        return None if self.rules is None else self.rules.crawl_delay(user_agent)


def parse_robots(text: str, robots_url: str) -> RobotsFile:
    """Parse robots.txt (RFC 9309) with protego, and list its groups as written for showing them.

    ``User-agent`` lines open a group, ``Allow``/``Disallow``/``Crawl-delay`` belong to it, ``Sitemap`` lines are
    global (relative ones resolved against ``robots_url``). Comments and unknown lines are ignored, and so are rules
    before the first ``User-agent``.
    """
    from protego import Protego  # only explore_site reads robots.txt

    rules = Protego.parse(text)
    sitemaps = (urljoin(robots_url, value.strip()) for value in rules.sitemaps if value.strip())
    return RobotsFile(sitemaps=tuple(dict.fromkeys(sitemaps)), groups=tuple(_groups(text)), rules=rules)


def _groups(text: str) -> list[RobotsGroup]:
    groups: list[RobotsGroup] = []
    current: RobotsGroup | None = None
    has_rules = False
    for raw in text.splitlines():
        key, colon, value = raw.split("#", 1)[0].strip().partition(":")
        if not colon:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "user-agent":
            if current is None or has_rules:
                current = RobotsGroup()
                groups.append(current)
                has_rules = False
            if value:
                current.user_agents.append(value)
        elif current is not None and key in ("allow", "disallow", "crawl-delay"):
            has_rules = True
            if key == "crawl-delay":
                current.crawl_delay = _number(value)
            elif value:
                (current.allow if key == "allow" else current.disallow).append(value)
    return groups


@dataclass(frozen=True, kw_only=True, slots=True)
class SitemapEntry:
    """One ``<url>`` of a sitemap."""

    url: str
    last_modified: str | None = None
    change_frequency: str | None = None
    priority: float | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class SitemapDocument:
    """What one sitemap file holds.

    Attributes:
        kind: ``urlset`` (pages) or ``sitemapindex`` (other sitemaps).
        entries: The pages, up to the limit asked for.
        children: The sitemaps an index names.
        more: The file holds more entries than were taken, or was cut short.
    """

    kind: Literal["urlset", "sitemapindex"]
    entries: tuple[SitemapEntry, ...] = ()
    children: tuple[str, ...] = ()
    more: bool = False


class SitemapError(ValueError):
    """The document is not a readable sitemap."""


def read_sitemap(body: bytes, *, limit: int, base_url: str, max_bytes: int = 50 * 1024 * 1024) -> SitemapDocument:
    """Read a sitemap or sitemap index (gzip-compressed or not), taking at most ``limit`` page entries.

    Parsing is incremental, so a body cut by the size cap still yields the entries before the cut. Documents with a
    DTD (``<!DOCTYPE``/``<!ENTITY``) are refused: sitemaps never need one, and entity expansion is how XML bombs work.

    Args:
        body: The file's bytes.
        limit: The most page entries to take.
        base_url: The sitemap's URL, for relative ``<loc>`` values.
        max_bytes: The most bytes a compressed sitemap may expand to.

    Returns:
        The document's entries or child sitemaps.

    Raises:
        SitemapError: The body is not a sitemap (or declares a DTD).
    """
    if body[:2] == b"\x1f\x8b":
        body = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, max_bytes)
    if _DECLARATIONS.search(body):
        raise SitemapError("it declares a DTD, which sitemaps never need")
    parser: XMLPullParser[Element] = XMLPullParser(events=("start", "end"))
    kind: Literal["urlset", "sitemapindex"] | None = None
    entries: list[SitemapEntry] = []
    children: list[str] = []
    more = False
    try:
        parser.feed(body)
        for item in parser.read_events():
            if len(item) != 2 or not isinstance(item[1], Element):
                continue
            event, element = item[0], item[1]
            name = _local(element.tag)
            if kind is None:
                if name not in ("urlset", "sitemapindex"):
                    raise SitemapError(f"its root element is <{name}>, not <urlset> or <sitemapindex>")
                kind = "urlset" if name == "urlset" else "sitemapindex"
            if event != "end":
                continue
            if name == "url" and kind == "urlset":
                entry = _entry(element, base_url)
                if entry is not None:
                    if len(entries) >= limit:
                        more = True
                        break
                    entries.append(entry)
                element.clear()
            elif name == "sitemap" and kind == "sitemapindex":
                location = _child_text(element, "loc")
                if location:
                    children.append(urljoin(base_url, location))
                element.clear()
        else:
            parser.close()
    except ParseError as exc:
        if kind is None:
            raise SitemapError(f"it is not well-formed XML ({exc})") from exc
        more = True  # cut short (size cap) or broken after a readable start: keep what was read
    if kind is None:
        raise SitemapError("it is empty")
    return SitemapDocument(kind=kind, entries=tuple(entries), children=tuple(dict.fromkeys(children)), more=more)


def _entry(element: Element, base_url: str) -> SitemapEntry | None:
    location = _child_text(element, "loc")
    if not location:
        return None
    priority = _number(_child_text(element, "priority") or "")
    return SitemapEntry(
        url=urljoin(base_url, location),
        last_modified=_child_text(element, "lastmod"),
        change_frequency=_child_text(element, "changefreq"),
        priority=priority,
    )


def _child_text(element: Element, name: str) -> str | None:
    for child in element:
        if _local(child.tag) == name:
            text = (child.text or "").strip()
            return text or None
    return None


def _local(tag: object) -> str:
    return str(tag).rsplit("}", 1)[-1]


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None
