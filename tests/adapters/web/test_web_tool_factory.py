"""The web tools are offered by their specs: each implementation is imported and built at its first call, with the
very spec the model was offered."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping

import pytest

from ironhive.adapters.config.schema import DeepResearchSection, WebSearchSection
from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptStep
from ironhive.adapters.tools.deferred import DeferredTool
from ironhive.adapters.web.explore import ExploreSiteTool
from ironhive.adapters.web.http import WebClient
from ironhive.adapters.web.research import DeepResearchTool
from ironhive.adapters.web.search_tool import SearchEndpoints, WebSearchTool
from ironhive.adapters.web.tools import build_web_tools
from ironhive.domain.errors import ToolArgumentError
from ironhive.ports.chat import JsonValue, ToolSpec
from tests.support.web_fakes import Result, WebFake

IMPLEMENTATIONS = (
    "ironhive.adapters.web.search_tool",
    "ironhive.adapters.web.explore",
    "ironhive.adapters.web.research",
    "ironhive.adapters.web.http",
    "ironhive.adapters.web.duckduckgo",
    "html.parser",
    "xml.etree.ElementTree",
)

BUILD_ONLY = """
import sys
from ironhive.adapters.config.schema import DeepResearchSection, WebSearchSection
from ironhive.adapters.scripted.client import ScriptedChatClient
from ironhive.adapters.web.tools import build_web_tools

tools = build_web_tools(
    WebSearchSection(), DeepResearchSection(enabled=True), research_client=ScriptedChatClient()
)
print(" ".join(tool.spec.name for tool in tools))
print(" ".join(sorted(name for name in sys.argv[1:] if name in sys.modules)))
"""


def test_offering_the_web_tools_imports_none_of_their_implementations() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BUILD_ONLY, *IMPLEMENTATIONS], capture_output=True, text=True, timeout=60, check=True
    )
    offered, imported = done.stdout.splitlines()
    assert offered.split() == ["web_search", "explore_site", "deep_research"]
    assert imported == ""


@pytest.mark.parametrize("default_max_results", [1, 10, 37])
async def test_each_tool_is_built_at_its_first_call_with_the_spec_it_was_offered(default_max_results: int) -> None:
    async with WebFake(results={"q": [Result(title="T", url="https://example.org/", snippet="S")]}) as fake:
        endpoints = SearchEndpoints(duckduckgo=fake.url("/html/"))
        web_search = WebSearchSection(default_max_results=default_max_results)
        tools = build_web_tools(
            web_search,
            DeepResearchSection(enabled=True, max_iterations=1),
            web=WebClient(),
            research_client=ScriptedChatClient([ScriptStep(text="Report.")]),
            endpoints=endpoints,
        )
        assert all(isinstance(tool, DeferredTool) and not tool.built for tool in tools)
        offered = [tool.spec for tool in tools]
        expected = {
            "web_search": WebSearchTool,
            "explore_site": ExploreSiteTool,
            "deep_research": DeepResearchTool,
        }
        for tool in tools:
            assert isinstance(tool, DeferredTool)
            with pytest.raises(ToolArgumentError):  # the built tool checks the arguments against the same schema
                await tool.invoke({})
            assert tool.built
            built = tool._tool
            assert isinstance(built, expected[tool.spec.name])
            assert built.spec == tool.spec
        assert [tool.spec for tool in tools] == offered
        assert offered[0].parameters["properties"]["max_results"]["default"] == default_max_results  # type: ignore[index]
        found = json.loads(await tools[0].invoke({"query": "q"}))
        assert found["resultCount"] == 1


class _Counted:
    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec
        self.calls: list[Mapping[str, JsonValue]] = []

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        self.calls.append(arguments)
        return f"call {len(self.calls)}"


async def test_a_deferred_tool_builds_once_and_a_failed_build_is_tried_again() -> None:
    spec = ToolSpec(name="t", description="d", parameters={"type": "object"})
    built: list[_Counted] = []
    failures = [RuntimeError("first build fails")]

    def build() -> _Counted:
        if failures:
            raise failures.pop()
        built.append(_Counted(spec))
        return built[-1]

    tool = DeferredTool(spec, build)
    assert tool.spec is spec and not tool.built and built == []
    with pytest.raises(RuntimeError, match="first build fails"):
        await tool.invoke({})
    assert not tool.built
    assert await tool.invoke({"a": 1}) == "call 1"
    assert await tool.invoke({"a": 2}) == "call 2"
    assert len(built) == 1 and built[0].calls == [{"a": 1}, {"a": 2}]
