"""MCP → ironhive mapping without I/O: tool names, specs and call results as text."""

from __future__ import annotations

import re

import mcp_types
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.mcp.mapping import result_text, tool_name, tool_spec


def test_names_carry_the_prefix_and_only_safe_characters() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert tool_name("my server", "files.read/all") == "mcp__my_server__files_read_all"
    assert tool_name("ünï", "") == "mcp___n____"


def test_long_names_are_cut_to_64_with_a_stable_hash() -> None:
    name = tool_name("server", "x" * 100)
    assert len(name) == 64
    assert name.startswith("mcp__server__xxx")
    assert re.fullmatch(r".*_[0-9a-f]{8}", name)
    assert tool_name("server", "x" * 100) == name
    assert tool_name("server", "x" * 101) != name


def test_disambiguation_appends_the_hash_even_to_short_names() -> None:
    plain = tool_name("s", "a.b")
    other = tool_name("s", "a_b", disambiguate=True)
    assert plain == "mcp__s__a_b"
    assert other.startswith("mcp__s__a_b_") and other != plain


@given(st.text(max_size=80), st.text(max_size=80), st.booleans())
def test_every_name_is_valid_for_model_apis(server: str, tool: str, disambiguate: bool) -> None:
    name = tool_name(server, tool, disambiguate=disambiguate)
    assert re.fullmatch(r"mcp__[A-Za-z0-9_-]{1,59}", name)


def test_specs_use_the_description_or_the_title_and_the_input_schema() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    described = tool_spec("mcp__s__find", mcp_types.Tool(name="find", description="Find things.", input_schema=schema))
    assert (described.name, described.description, described.parameters) == ("mcp__s__find", "Find things.", schema)
    titled = tool_spec("mcp__s__t", mcp_types.Tool(name="t", title="Titled", input_schema={"type": "object"}))
    assert titled.description == "Titled"
    bare = tool_spec("mcp__s__b", mcp_types.Tool(name="b", input_schema={"type": "object"}))
    assert bare.description == ""


def test_results_join_text_blocks_and_summarise_the_rest() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(text="one"),
            mcp_types.ImageContent(data="AA==", mime_type="image/jpeg"),
            mcp_types.AudioContent(data="AA==", mime_type="audio/wav"),
            mcp_types.ResourceLink(name="doc", uri="file:///doc.md"),
            mcp_types.EmbeddedResource(resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="inline")),
            mcp_types.EmbeddedResource(
                resource=mcp_types.BlobResourceContents(uri="file:///b.bin", blob="AA==", mime_type="application/zip")
            ),
            mcp_types.TextContent(text="two"),
        ]
    )
    assert result_text(result) == (
        "one\n[image: image/jpeg]\n[audio: audio/wav]\n[resource link: file:///doc.md]\ninline\n"
        "[resource: file:///b.bin, application/zip]\ntwo"
    )


def test_structured_content_alone_becomes_json_and_nothing_becomes_empty_text() -> None:
    structured = mcp_types.CallToolResult(content=[], structured_content={"temperature": 21.5, "unit": "°C"})
    assert result_text(structured) == '{"temperature": 21.5, "unit": "°C"}'
    assert result_text(mcp_types.CallToolResult(content=[])) == ""
