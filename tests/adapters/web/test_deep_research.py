"""deep_research: loopback search and pages, a scripted model that refines once then stops, and the final report."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptStep
from ironhive.adapters.web.duckduckgo import DuckDuckGoSearchBackend
from ironhive.adapters.web.html_text import html_to_text
from ironhive.adapters.web.http import WebClient
from ironhive.adapters.web.research import (
    DECISION_INSTRUCTIONS,
    REPORT_INSTRUCTIONS,
    DeepResearchTool,
    iterations_for,
    parse_decision,
)
from ironhive.domain.errors import ProviderError, ToolArgumentError, ToolError
from ironhive.ports.chat import Role
from tests.support.web_fakes import Result, WebFake

QUESTION = "how do sitemaps work"
REFINED = "sitemap index limits"
PAGE_A = """<html><head><title>Sitemaps explained</title><style>p { color: red }</style></head>
<body><nav>Menu</nav><h1>Sitemaps</h1><p>A sitemap lists the   pages of a site.</p>
<script>var x = 1;</script></body></html>"""
PAGE_B = (
    "<html><head><title>Robots</title></head><body><p>robots.txt names sitemaps in Sitemap: lines.</p></body></html>"
)
PAGE_D = "<html><body><p>A sitemap index lists up to 50,000 sitemaps.</p></body></html>"


@pytest.fixture
async def fake() -> AsyncIterator[WebFake]:
    async with WebFake() as server:
        a = server.add_page("/pages/a.html", PAGE_A)
        b = server.add_page("/pages/b.html", PAGE_B)
        c = server.url("/pages/missing.html")
        d = server.add_page("/pages/d.html", PAGE_D)
        server.add_page("/pages/manual.pdf", b"%PDF-1.7 binary", content_type="application/pdf")
        server.results[QUESTION] = [
            Result(title="Sitemaps explained", url=a, snippet="What a sitemap is."),
            Result(title="Robots and sitemaps", url=b, snippet="Robots.txt and sitemaps."),
            Result(title="Missing page", url=c, snippet="This page is gone."),
            Result(title="Never read", url=server.url("/pages/fourth.html"), snippet="Beyond the pages per round."),
        ]
        server.results[REFINED] = [
            Result(title="Robots and sitemaps", url=b, snippet="Robots.txt and sitemaps."),
            Result(title="Sitemap index", url=d, snippet="Index files."),
        ]
        yield server


def research(fake: WebFake, model: ScriptedChatClient, **settings: int) -> DeepResearchTool:
    web = WebClient()
    backend = DuckDuckGoSearchBackend(web, url=fake.url("/html/"))
    return DeepResearchTool(backend, model, web=web, model="research-model", **settings)


async def test_refines_once_then_stops_and_reports_with_sources(fake: WebFake) -> None:
    model = ScriptedChatClient(
        [
            ScriptStep(text=f"REFINE: {REFINED}"),
            ScriptStep(text="STOP"),
            ScriptStep(text="Sitemaps list a site's pages [1]; an index lists sitemaps [4]."),
        ]
    )
    result = await research(fake, model).invoke({"query": QUESTION, "depth": "comprehensive"})

    a, b, c, d = (fake.url(f"/pages/{name}") for name in ("a.html", "b.html", "missing.html", "d.html"))
    assert result == (
        f"# Research: {QUESTION}\n\n"
        "Sitemaps list a site's pages [1]; an index lists sitemaps [4].\n\n"
        "## Sources\n"
        f"[1] Sitemaps explained - {a}\n"
        f"[2] Robots and sitemaps - {b}\n"
        f"[3] Missing page - {c} (not read: HTTP 404)\n"
        f"[4] Sitemap index - {d}\n\n"
        "## Research metadata\n"
        "- Depth: comprehensive (2 of 4 search rounds run)\n"
        f'- Queries: "{QUESTION}"; "{REFINED}"\n'
        "- Pages read: 3 of 4\n"
        "- Search: DuckDuckGo"
    )
    assert [request.query.get("q") for request in fake.requests if request.path == "/html/"] == [QUESTION, REFINED]
    # b.html was found twice but read once; the fourth result of the first search was beyond the pages per round.
    assert fake.paths().count("/pages/b.html") == 1
    assert "/pages/fourth.html" not in fake.paths()

    decision, second_decision, report = model.requests
    for request in model.requests:
        assert request.options.tools == ()
        assert request.options.model == "research-model"
    assert [message.role for message in decision.messages] == [Role.SYSTEM, Role.USER]
    assert decision.messages[0].text == DECISION_INSTRUCTIONS
    assert decision.messages[1].text == (
        f"Research question: {QUESTION}\n\n"
        f"Searches so far:\n1. {QUESTION}\n\n"
        "Findings so far:\n\n"
        f"[1] Sitemaps explained ({a})\nMenu\nSitemaps\nA sitemap lists the pages of a site.\n\n"
        f"[2] Robots and sitemaps ({b})\nrobots.txt names sitemaps in Sitemap: lines.\n\n"
        f"[3] Missing page ({c})\nThis page is gone.\n\n"
        "Reply with 'REFINE: <query>' or 'STOP'."
    )
    assert f"Searches so far:\n1. {QUESTION}\n2. {REFINED}\n\n" in second_decision.messages[1].text
    assert f"[4] Sitemap index ({d})\nA sitemap index lists up to 50,000 sitemaps." in second_decision.messages[1].text
    assert report.messages[0].text == REPORT_INSTRUCTIONS
    assert report.messages[1].text == (
        f"Research question: {QUESTION}\n\nSources:\n\n"
        f"[1] Sitemaps explained\nURL: {a}\nMenu\nSitemaps\nA sitemap lists the pages of a site.\n\n"
        f"[2] Robots and sitemaps\nURL: {b}\nrobots.txt names sitemaps in Sitemap: lines.\n\n"
        f"[3] Missing page\nURL: {c}\nThis page is gone.\n\n"
        f"[4] Sitemap index\nURL: {d}\nA sitemap index lists up to 50,000 sitemaps.\n\n"
        "Write the report."
    )


async def test_quick_runs_one_round_without_asking_to_refine(fake: WebFake) -> None:
    model = ScriptedChatClient([ScriptStep(text="Report.")])
    result = await research(fake, model).invoke({"query": QUESTION, "depth": "QUICK"})
    assert len(model.requests) == 1
    assert model.requests[0].messages[0].text == REPORT_INSTRUCTIONS
    assert "- Depth: quick (1 of 1 search rounds run)" in result


async def test_every_depth_is_capped_by_max_iterations(fake: WebFake) -> None:
    fake.results["third query"] = [Result(title="Third", url=fake.url("/pages/d.html"), snippet="s")]
    model = ScriptedChatClient([ScriptStep(text=f'Thinking...\n**REFINE: "{REFINED}"**'), ScriptStep(text="Report.")])
    result = await research(fake, model, max_iterations=2).invoke({"query": QUESTION, "depth": "deep"})
    assert "- Depth: deep (2 of 2 search rounds run)" in result
    assert [request.query.get("q") for request in fake.requests if request.path == "/html/"] == [QUESTION, REFINED]


async def test_a_repeated_query_ends_the_research(fake: WebFake) -> None:
    model = ScriptedChatClient([ScriptStep(text=f"REFINE: {QUESTION}"), ScriptStep(text="Report.")])
    result = await research(fake, model).invoke({"query": QUESTION})
    assert "- Depth: standard (1 of 2 search rounds run)" in result
    assert len(model.requests) == 2


async def test_a_later_search_failure_keeps_what_was_found(fake: WebFake) -> None:
    async def challenge_then_report(messages: object, options: object) -> ScriptStep:
        fake.duckduckgo_challenge = True
        return ScriptStep(text=f"REFINE: {REFINED}")

    model = ScriptedChatClient([challenge_then_report, ScriptStep(text="Report.")])
    result = await research(fake, model).invoke({"query": QUESTION})
    assert "- Search 2 failed: DuckDuckGo answered with a bot check" in result
    assert "- Pages read: 2 of 3" in result


async def test_a_non_text_page_is_listed_but_not_read(fake: WebFake) -> None:
    fake.results["manual"] = [Result(title="Manual", url=fake.url("/pages/manual.pdf"), snippet="The PDF manual.")]
    model = ScriptedChatClient([ScriptStep(text="Report.")])
    result = await research(fake, model).invoke({"query": "manual", "depth": "quick"})
    assert f"[1] Manual - {fake.url('/pages/manual.pdf')} (not read: not a text page (application/pdf))" in result
    assert "URL: " + fake.url("/pages/manual.pdf") + "\nThe PDF manual." in model.requests[0].messages[1].text


async def test_a_page_without_content_type_is_read_when_it_looks_like_html(fake: WebFake) -> None:
    url = fake.add_page("/pages/bare", "<!DOCTYPE html><html><body><p>Bare page text.</p></body></html>", None)
    fake.results["bare"] = [Result(title="Bare", url=url, snippet="snippet")]
    model = ScriptedChatClient([ScriptStep(text="Report.")])
    result = await research(fake, model).invoke({"query": "bare", "depth": "quick"})
    assert f"[1] Bare - {url}\n" in result
    assert f"URL: {url}\nBare page text." in model.requests[0].messages[1].text


async def test_failures_are_tool_errors(fake: WebFake) -> None:
    with pytest.raises(ToolError, match=r"^Deep research found no web results for 'nothing here'\.$"):
        await research(fake, ScriptedChatClient()).invoke({"query": "nothing here", "depth": "quick"})
    fake.duckduckgo_challenge = True
    with pytest.raises(ToolError, match=r"^DuckDuckGo answered with a bot check"):
        await research(fake, ScriptedChatClient()).invoke({"query": QUESTION})
    fake.duckduckgo_challenge = False
    broken = ScriptedChatClient([ScriptStep(error=ProviderError("HTTP 500 from the provider", status=500))])
    with pytest.raises(ToolError, match=r"^Deep research could not consult its model: HTTP 500 from the provider$"):
        await research(fake, broken).invoke({"query": QUESTION, "depth": "quick"})
    silent = ScriptedChatClient([ScriptStep(text="  ")])
    with pytest.raises(ToolError, match=r"^Deep research read the sources, but the model returned no report\.$"):
        await research(fake, silent).invoke({"query": QUESTION, "depth": "quick"})
    with pytest.raises(ToolArgumentError, match=r"must be one of: quick, standard, comprehensive, deep"):
        await research(fake, silent).invoke({"query": QUESTION, "depth": "forever"})


@pytest.mark.parametrize(
    ("answer", "query"),
    [
        ("REFINE: sitemap limits", "sitemap limits"),
        ("refine: 'quoted query'", "quoted query"),
        ("I think we need more.\nREFINE: next", "next"),
        ("STOP", None),
        ("Stop here.\nREFINE: ignored", None),
        ("REFINE:", None),
        ("no idea", None),
        ("", None),
    ],
)
def test_parse_decision(answer: str, query: str | None) -> None:
    assert parse_decision(answer) == query


@pytest.mark.parametrize(
    ("depth", "cap", "rounds"),
    [
        ("quick", 5, 1),
        ("standard", 5, 2),
        ("comprehensive", 5, 4),
        ("deep", 5, 5),
        ("deep", 7, 7),
        ("comprehensive", 3, 3),
    ],
)
def test_iterations_for(depth: str, cap: int, rounds: int) -> None:
    assert iterations_for(depth, cap) == rounds


def test_html_to_text_keeps_visible_text_and_the_title() -> None:
    page = html_to_text(PAGE_A)
    assert page.title == "Sitemaps explained"
    assert page.text == "Menu\nSitemaps\nA sitemap lists the pages of a site."
    cut = html_to_text("<p>" + "word " * 100 + "</p>", max_characters=20)
    assert (cut.text, cut.truncated) == ("word word word word", True)
    assert html_to_text("a<br>b<br/>c &amp; d<svg><text>x</text></svg>").text == "a\nb\nc & d"
