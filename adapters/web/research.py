"""The ``deep_research`` tool: search, read the top pages, let a model refine the query or stop, then report."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ironhive.adapters.tools.arguments import validate_arguments
from ironhive.adapters.web.html_text import PageText, html_to_text, tidy
from ironhive.adapters.web.http import WebClient
from ironhive.adapters.web.search import SearchBackend
from ironhive.adapters.web.specs import DEEP_RESEARCH as NAME
from ironhive.adapters.web.specs import DEEP_RESEARCH_PARAMETERS as PARAMETERS
from ironhive.adapters.web.specs import DEEP_RESEARCH_SPEC
from ironhive.domain.errors import ProviderError, ToolError
from ironhive.ports.chat import ChatClient, ChatMessage, ChatOptions, JsonValue, Role, ToolSpec

DEPTH_ITERATIONS = {"quick": 1, "standard": 2, "comprehensive": 4}
"""Search rounds per depth; ``deep`` runs ``maxIterations``. Every depth is capped by ``maxIterations``."""

DECISION_INSTRUCTIONS = (
    "You steer a web research loop. Given a research question, the searches made so far and what the pages found "
    "say, decide whether one more search would add something important. Answer with exactly one line: "
    "'REFINE: <the next search query>' to search again, or 'STOP' when the findings are enough."
)
REPORT_INSTRUCTIONS = (
    "You write research reports from web sources. Answer the research question using only the sources given and "
    "cite them by number, like [1]. Start with a short summary, then the details; say where sources disagree or "
    "leave the question open."
)
PAGE_MAX_BYTES = 2 * 1024 * 1024
_EXCERPT = 800


@dataclass(kw_only=True, slots=True)
class _Source:
    title: str
    url: str
    snippet: str
    text: str | None = None
    error: str | None = None


def iterations_for(depth: str, max_iterations: int) -> int:
    """The search rounds of a depth, capped by ``max_iterations`` (``deep`` runs all of them)."""
    return max(1, min(DEPTH_ITERATIONS.get(depth, max_iterations), max_iterations))


def parse_decision(answer: str) -> str | None:
    """The refined query of a ``REFINE: <query>`` answer; ``None`` for ``STOP`` or anything unreadable."""
    for line in answer.splitlines():
        cleaned = line.strip().strip("*`").strip()
        word = cleaned.upper()
        if word.startswith("REFINE"):
            query = cleaned.partition(":")[2].strip().strip("\"'`").strip()
            return query or None
        if word.startswith("STOP"):
            return None
    return None


class DeepResearchTool:
    """Iterative web research with a model in the loop.

    Each round searches, reads the top new pages (HTML stripped to text, sizes capped) and, unless it is the last
    round, asks the model whether to refine the query or stop. Finally the model writes a report from the sources;
    the tool returns it with the numbered sources and the research metadata.

    Args:
        backend: The search backend.
        client: The model that steers the research and writes the report.
        web: The HTTP client that reads pages.
        max_iterations: ``deepResearch.maxIterations``: the cap on search rounds.
        model: The model id sent as ``ChatOptions.model`` (``deepResearch.model``).
        results_per_search: Results asked of each search.
        pages_per_iteration: New pages read per round.
        page_characters: Text kept of each page.
        report_characters: Source text given to the report in total.
    """

    def __init__(
        self,
        backend: SearchBackend,
        client: ChatClient,
        *,
        web: WebClient,
        max_iterations: int = 5,
        model: str | None = None,
        results_per_search: int = 5,
        pages_per_iteration: int = 3,
        page_characters: int = 6000,
        report_characters: int = 40000,
    ) -> None:
        self._backend = backend
        self._client = client
        self._web = web
        self._max_iterations = max(1, max_iterations)
        self._options = ChatOptions(model=model, tools=())
        self._results_per_search = results_per_search
        self._pages_per_iteration = pages_per_iteration
        self._page_characters = page_characters
        self._report_characters = report_characters

    @property
    def spec(self) -> ToolSpec:
        """The tool's name, description and JSON schema."""
        return DEEP_RESEARCH_SPEC

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Research the question and return the report, its sources and the research metadata.

        Raises:
            ToolArgumentError: ``query`` is missing or ``depth`` unknown.
            ToolError: The first search failed, nothing was found, or the model failed.
        """
        validated = validate_arguments(NAME, PARAMETERS, arguments)
        question = validated.string("query").strip()
        depth = validated.string("depth")
        planned = iterations_for(depth, self._max_iterations)
        queries: list[str] = []
        sources: list[_Source] = []
        notes: list[str] = []
        next_query: str | None = question
        while next_query is not None and len(queries) < planned:
            queries.append(next_query)
            try:
                hits = await self._backend.search(next_query, self._results_per_search)
            except ToolError as exc:
                if len(queries) == 1:
                    raise
                notes.append(f"Search {len(queries)} failed: {exc}")
                break
            known = {source.url for source in sources}
            fresh = [_Source(title=hit.title, url=hit.url, snippet=hit.snippet) for hit in hits if hit.url not in known]
            fresh = fresh[: self._pages_per_iteration]
            await asyncio.gather(*(self._read(source) for source in fresh))
            sources.extend(fresh)
            if len(queries) == planned:
                break
            next_query = parse_decision(
                await self._ask(DECISION_INSTRUCTIONS, _decision_prompt(question, queries, sources))
            )
            if next_query is not None and next_query in queries:
                next_query = None  # the same search again would find the same pages
        if not sources:
            raise ToolError(f"Deep research found no web results for '{question}'.")
        report = await self._ask(REPORT_INSTRUCTIONS, self._report_prompt(question, sources))
        if not report:
            raise ToolError("Deep research read the sources, but the model returned no report.")
        return _render(question, report, sources, queries, notes, depth=depth, planned=planned, backend=self._backend)

    async def _read(self, source: _Source) -> None:
        try:
            fetched = await self._web.get(source.url, max_bytes=PAGE_MAX_BYTES)
            if not fetched.ok:
                raise ToolError(f"HTTP {fetched.status}")
            page = _page_text(fetched.content_type, fetched.text(), self._page_characters)
        except ToolError as exc:
            source.error = str(exc)
            return
        source.text = page.text
        source.title = source.title or page.title

    async def _ask(self, instructions: str, prompt: str) -> str:
        messages = [ChatMessage.of_text(Role.SYSTEM, instructions), ChatMessage.of_text(Role.USER, prompt)]
        try:
            response = await self._client.get_response(messages, self._options)
        except ProviderError as exc:
            raise ToolError(f"Deep research could not consult its model: {exc}") from exc
        return response.message.text.strip()

    def _report_prompt(self, question: str, sources: Sequence[_Source]) -> str:
        share = min(self._page_characters, self._report_characters // len(sources))
        blocks = []
        for number, source in enumerate(sources, start=1):
            body = (source.text or source.snippet or "(the page could not be read)")[:share]
            blocks.append(f"[{number}] {source.title or source.url}\nURL: {source.url}\n{body}")
        return f"Research question: {question}\n\nSources:\n\n" + "\n\n".join(blocks) + "\n\nWrite the report."


def _page_text(content_type: str, text: str, limit: int) -> PageText:
    # aiohttp reports a missing Content-Type as application/octet-stream: look at the page itself then.
    sniffed = content_type == "application/octet-stream" and text[:1024].lstrip().lower().startswith(
        ("<!doctype", "<html")
    )
    if not content_type or "html" in content_type or sniffed:
        return html_to_text(text, max_characters=limit)
    if content_type.startswith("text/") or content_type in ("application/json", "application/xml"):
        tidied = tidy(text)
        return PageText(title="", text=tidied[:limit], truncated=len(tidied) > limit)
    raise ToolError(f"not a text page ({content_type})")


def _decision_prompt(question: str, queries: Sequence[str], sources: Sequence[_Source]) -> str:
    searched = "\n".join(f"{number}. {query}" for number, query in enumerate(queries, start=1))
    findings = "\n\n".join(
        f"[{number}] {source.title or source.url} ({source.url})\n"
        f"{(source.text or source.snippet or '(the page could not be read)')[:_EXCERPT]}"
        for number, source in enumerate(sources, start=1)
    )
    return (
        f"Research question: {question}\n\nSearches so far:\n{searched}\n\nFindings so far:\n\n"
        f"{findings or '(nothing found yet)'}\n\nReply with 'REFINE: <query>' or 'STOP'."
    )


def _render(
    question: str,
    report: str,
    sources: Sequence[_Source],
    queries: Sequence[str],
    notes: Sequence[str],
    *,
    depth: str,
    planned: int,
    backend: SearchBackend,
) -> str:
    listed = "\n".join(
        f"[{number}] {source.title or source.url} - {source.url}"
        + (f" (not read: {source.error})" if source.error else "")
        for number, source in enumerate(sources, start=1)
    )
    read = sum(1 for source in sources if source.text is not None)
    metadata = [
        f"- Depth: {depth} ({len(queries)} of {planned} search rounds run)",
        "- Queries: " + "; ".join(f'"{query}"' for query in queries),
        f"- Pages read: {read} of {len(sources)}",
        f"- Search: {backend.name}",
        *(f"- {note}" for note in notes),
    ]
    return f"# Research: {question}\n\n{report}\n\n## Sources\n{listed}\n\n## Research metadata\n" + "\n".join(metadata)
