"""explore_site against a loopback site: robots.txt, a sitemap index, plain and gzipped sitemaps, caps and failures."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator

import pytest

from ironhive.adapters.web.explore import ExploreSiteTool
from ironhive.adapters.web.http import WebClient
from ironhive.adapters.web.site import RobotsFile, SitemapEntry, SitemapError, parse_robots, read_sitemap
from ironhive.domain.errors import ToolArgumentError, ToolError
from tests.support.web_fakes import WebFake, gzipped

ROBOTS = """# robots.txt of the fake site
User-agent: *
Disallow: /private/
Disallow: /tmp/   # scratch
Allow: /private/public-note.html
Crawl-delay: 2

User-agent: BadBot
User-agent: EvilBot
Disallow: /

Sitemap: {base}/sitemap_index.xml
Sitemap: /sitemaps/extra.xml
"""

INDEX = """<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>{base}/sitemaps/pages.xml</loc><lastmod>2026-01-02</lastmod></sitemap>
  <sitemap><loc>/sitemaps/posts.xml.gz</loc></sitemap>
  <sitemap><loc>{base}/sitemaps/missing.xml</loc></sitemap>
</sitemapindex>
"""


def urlset(*paths: str, base: str) -> str:
    items = "\n".join(
        f"  <url><loc>{base}{path}</loc><lastmod>2026-01-0{n + 1}</lastmod>"
        f"<changefreq>weekly</changefreq><priority>0.{9 - n}</priority></url>"
        for n, path in enumerate(paths)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{items}\n</urlset>\n'
    )


@pytest.fixture
async def site() -> AsyncIterator[WebFake]:
    async with WebFake() as fake:
        base = fake.base_url
        fake.add_page("/robots.txt", ROBOTS.format(base=base), content_type="text/plain")
        fake.add_page("/sitemap_index.xml", INDEX.format(base=base), content_type="application/xml")
        fake.add_page("/sitemaps/extra.xml", urlset("/about", base=base), content_type="application/xml")
        fake.add_page("/sitemaps/pages.xml", urlset("/", "/docs", "/pricing", base=base), content_type="text/xml")
        fake.add_page(
            "/sitemaps/posts.xml.gz",
            gzipped(urlset("/blog/1", "/blog/2", "/blog/3", base=base)),
            content_type="application/octet-stream",
        )
        yield fake


def entry(base: str, path: str, n: int) -> dict[str, object]:
    return {
        "url": base + path,
        "lastModified": f"2026-01-0{n + 1}",
        "changeFrequency": "weekly",
        "priority": (9 - n) / 10,
    }


async def test_robots_rules_sitemap_index_and_gzipped_sitemaps(site: WebFake) -> None:
    base = site.base_url
    result = json.loads(await ExploreSiteTool(WebClient()).invoke({"baseUrl": f"{base}/docs/start"}))
    assert result == {
        "baseUrl": f"{base}/docs/start",
        "robots": {
            "url": f"{base}/robots.txt",
            "found": True,
            "status": 200,
            "sitemapUrls": [f"{base}/sitemap_index.xml", f"{base}/sitemaps/extra.xml"],
            "groups": [
                {
                    "userAgents": ["*"],
                    "disallow": ["/private/", "/tmp/"],
                    "allow": ["/private/public-note.html"],
                    "crawlDelay": 2.0,
                },
                {"userAgents": ["BadBot", "EvilBot"], "disallow": ["/"], "allow": []},
            ],
        },
        "sitemaps": [
            {"url": f"{base}/sitemap_index.xml", "type": "sitemapindex", "entries": 0},
            {"url": f"{base}/sitemaps/extra.xml", "type": "urlset", "entries": 1},
            {"url": f"{base}/sitemaps/pages.xml", "type": "urlset", "entries": 3},
            {"url": f"{base}/sitemaps/posts.xml.gz", "type": "urlset", "entries": 3},
        ],
        "sitemapEntries": [
            entry(base, "/about", 0),
            entry(base, "/", 0),
            entry(base, "/docs", 1),
            entry(base, "/pricing", 2),
            entry(base, "/blog/1", 0),
            entry(base, "/blog/2", 1),
            entry(base, "/blog/3", 2),
        ],
        "sitemapEntryCount": 7,
        "truncated": False,
        "sitemapErrors": [f"{base}/sitemaps/missing.xml: HTTP 404"],
    }


async def test_entries_stop_at_max_sitemap_entries(site: WebFake) -> None:
    result = json.loads(await ExploreSiteTool(WebClient(), max_sitemap_entries=3).invoke({"base_url": site.base_url}))
    assert [item["url"] for item in result["sitemapEntries"]] == [
        site.url("/about"),
        site.url("/"),
        site.url("/docs"),
    ]
    assert result["sitemapEntryCount"] == 3
    assert result["truncated"] is True
    assert "/sitemaps/posts.xml.gz" not in site.paths()


async def test_include_sitemap_false_reads_only_robots(site: WebFake) -> None:
    result = json.loads(
        await ExploreSiteTool(WebClient()).invoke({"base_url": site.base_url, "include_sitemap": False})
    )
    assert set(result) == {"baseUrl", "robots"}
    assert site.paths() == ["/robots.txt"]


async def test_without_robots_the_conventional_sitemap_is_tried() -> None:
    async with WebFake() as fake:
        fake.add_page("/sitemap.xml", urlset("/only", base=fake.base_url), content_type="application/xml")
        result = json.loads(await ExploreSiteTool(WebClient()).invoke({"base_url": fake.base_url}))
    assert result["robots"] == {
        "url": fake.url("/robots.txt"),
        "found": False,
        "status": 404,
        "sitemapUrls": [],
        "groups": [],
    }
    assert [item["url"] for item in result["sitemapEntries"]] == [fake.url("/only")]
    assert "sitemapErrors" not in result


async def test_a_site_without_robots_or_sitemap_is_not_an_error() -> None:
    async with WebFake() as fake:
        result = json.loads(await ExploreSiteTool(WebClient()).invoke({"base_url": fake.base_url}))
    assert (result["sitemapEntryCount"], result["sitemaps"], result["truncated"]) == (0, [], False)
    assert "sitemapErrors" not in result


async def test_a_listed_sitemap_that_is_not_xml_or_declares_a_dtd_is_reported() -> None:
    async with WebFake() as fake:
        fake.add_page("/robots.txt", "Sitemap: /a.xml\nSitemap: /b.xml\n", content_type="text/plain")
        fake.add_page("/a.xml", "<html><body>Soft 404</body></html>")
        fake.add_page(
            "/b.xml",
            '<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "aaaa">]><urlset><url><loc>&a;</loc></url></urlset>',
            content_type="application/xml",
        )
        result = json.loads(await ExploreSiteTool(WebClient()).invoke({"base_url": fake.base_url}))
    assert result["sitemapErrors"] == [
        f"{fake.url('/a.xml')}: not a sitemap: its root element is <html>, not <urlset> or <sitemapindex>",
        f"{fake.url('/b.xml')}: not a sitemap: it declares a DTD, which sitemaps never need",
    ]
    assert result["sitemapEntries"] == []


async def test_bad_base_urls_and_unreachable_sites() -> None:
    tool = ExploreSiteTool(WebClient())
    with pytest.raises(ToolArgumentError, match=r"only http and https URLs can be fetched"):
        await tool.invoke({"base_url": "file:///etc"})
    with pytest.raises(ToolArgumentError, match=r"required parameter 'base_url'"):
        await tool.invoke({})
    async with WebFake() as fake:
        gone = fake.base_url
    with pytest.raises(ToolError, match=r"cannot connect to 127\.0\.0\.1"):
        await tool.invoke({"base_url": gone})


# --- the parsers -----------------------------------------------------------------------------------------------------


def test_robots_rules_before_any_user_agent_are_ignored_and_sitemaps_resolve() -> None:
    robots = parse_robots(
        "Disallow: /ignored\nSITEMAP: sitemap.xml\nuser-agent: a\ndisallow:\ncrawl-delay: soon\n",
        "https://example.org/robots.txt",
    )
    assert robots.sitemaps == ("https://example.org/sitemap.xml",)
    assert len(robots.groups) == 1
    group = robots.groups[0]
    assert (group.user_agents, group.disallow, group.allow, group.crawl_delay) == (["a"], [], [], None)


def test_a_sitemap_cut_short_keeps_the_entries_before_the_cut() -> None:
    full = urlset("/a", "/b", "/c", base="https://example.org").encode()
    cut = full[: full.index(b"/c</loc>")]
    document = read_sitemap(cut, limit=10, base_url="https://example.org/sitemap.xml")
    assert [item.url for item in document.entries] == ["https://example.org/a", "https://example.org/b"]
    assert document.more is True


def test_sitemap_limit_relative_locations_and_gzip() -> None:
    body = gzip.compress(b"<urlset><url><loc>/x</loc></url><url><loc>/y</loc></url><url><loc>/z</loc></url></urlset>")
    document = read_sitemap(body, limit=2, base_url="https://example.org/maps/s.xml")
    assert document.entries == (SitemapEntry(url="https://example.org/x"), SitemapEntry(url="https://example.org/y"))
    assert document.more is True
    with pytest.raises(SitemapError, match=r"is not well-formed XML"):
        read_sitemap(b"not xml", limit=5, base_url="https://example.org/")


# --- robots.txt decisions (protego, RFC 9309) ------------------------------------------------------------------------

DECISIONS = """\
User-agent: *
Disallow: /private/
Allow: /private/public-note.html
Disallow: /*.pdf$
Crawl-delay: 2

User-agent: ironhive
User-agent: OtherBot
Disallow: /drafts/
Allow: /drafts/published/
Crawl-delay: 0.5

User-agent: BadBot
Disallow: /
"""


@pytest.mark.parametrize(
    ("path", "agent", "allowed"),
    [
        # ironhive has its own group: only that group's rules apply, not those of "*".
        ("/private/secret.html", "ironhive", True),
        ("/drafts/plan.html", "ironhive", False),
        ("/drafts/published/plan.html", "ironhive", True),  # the longer Allow overrides the Disallow
        ("/drafts/plan.html", "Mozilla/5.0 (compatible; OtherBot/2.1)", False),
        # Any other agent falls back to "*".
        ("/private/secret.html", "SomeCrawler", False),
        ("/private/public-note.html", "SomeCrawler", True),
        ("/docs/manual.pdf", "SomeCrawler", False),
        ("/docs/manual.pdf?download=1", "SomeCrawler", True),  # "$" anchors the end
        ("/drafts/plan.html", "SomeCrawler", True),
        ("/", "BadBot", False),
        ("/robots.txt", "BadBot", True),
    ],
)
def test_robots_decisions_follow_groups_and_the_longest_rule(path: str, agent: str, allowed: bool) -> None:
    robots = parse_robots(DECISIONS, "https://example.org/robots.txt")
    assert robots.can_fetch(f"https://example.org{path}", agent) is allowed


def test_crawl_delay_is_the_matching_groups_and_no_robots_allows_everything() -> None:
    robots = parse_robots(DECISIONS, "https://example.org/robots.txt")
    assert robots.crawl_delay() == 0.5
    assert robots.crawl_delay("SomeCrawler") == 2.0
    assert robots.crawl_delay("BadBot") is None
    empty = RobotsFile()
    assert empty.can_fetch("https://example.org/anything") and empty.crawl_delay() is None


async def test_sitemap_entries_robots_disallows_for_ironhive_are_marked() -> None:
    async with WebFake() as fake:
        base = fake.base_url
        fake.add_page(
            "/robots.txt",
            f"User-agent: ironhive\nDisallow: /drafts/\nSitemap: {base}/s.xml\n",
            content_type="text/plain",
        )
        fake.add_page("/s.xml", urlset("/drafts/a", "/docs", base=base), content_type="application/xml")
        result = json.loads(await ExploreSiteTool(WebClient()).invoke({"base_url": base}))

    assert [(item["url"], item.get("robotsDisallowed")) for item in result["sitemapEntries"]] == [
        (f"{base}/drafts/a", True),
        (f"{base}/docs", None),
    ]
