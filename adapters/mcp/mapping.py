"""Pure mapping from MCP to ironhive: tool names (``mcp__<server>__<tool>``), tool specs, call results as text."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import cast

import mcp_types

from ironhive.ports.chat import JsonValue, ToolSpec

TOOL_NAME_PREFIX = "mcp__"
MAX_TOOL_NAME_LENGTH = 64
"""The longest function name the model APIs accept (OpenAI, Anthropic and Gemini all stop at 64)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_DIGEST_LENGTH = 8


def tool_name(server: str, tool: str, *, disambiguate: bool = False) -> str:
    """The ironhive name of an MCP tool: ``mcp__<server>__<tool>``, only ``[A-Za-z0-9_-]``, at most 64 characters.

    Other characters become ``_``. A name that is too long (or that must differ from an equal one already taken,
    ``disambiguate``) is cut and ends in ``_`` and 8 hex digits of a hash of the original server and tool names, so it
    stays stable between runs.

    Args:
        server: The plugin's name.
        tool: The tool's name as the server lists it.
        disambiguate: Always append the hash (for the second of two tools whose cleaned names collide).
    """
    name = f"{TOOL_NAME_PREFIX}{_clean(server)}__{_clean(tool)}"
    if len(name) <= MAX_TOOL_NAME_LENGTH and not disambiguate:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_DIGEST_LENGTH]
    return f"{name[: MAX_TOOL_NAME_LENGTH - _DIGEST_LENGTH - 1]}_{digest}"


def tool_spec(name: str, tool: mcp_types.Tool) -> ToolSpec:
    """The spec the model sees: the ironhive name, the server's description (or title) and its input schema."""
    description = tool.description or tool.title or ""
    schema = cast(Mapping[str, JsonValue], tool.input_schema)
    return ToolSpec(name=name, description=description, parameters=schema)


def result_text(result: mcp_types.CallToolResult) -> str:
    """A call's content as text: text blocks as they are, other blocks summarised, one block per line.

    A result without content blocks but with structured content gives that content as JSON.
    """
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


def _block_text(block: mcp_types.ContentBlock) -> str:
    match block:
        case mcp_types.TextContent():
            return block.text
        case mcp_types.ImageContent():
            return f"[image: {block.mime_type}]"
        case mcp_types.AudioContent():
            return f"[audio: {block.mime_type}]"
        case mcp_types.ResourceLink():
            return f"[resource link: {block.uri}]"
        case mcp_types.EmbeddedResource(resource=mcp_types.TextResourceContents() as contents):
            return contents.text
        case mcp_types.EmbeddedResource():
            mime = f", {block.resource.mime_type}" if block.resource.mime_type else ""
            return f"[resource: {block.resource.uri}{mime}]"
    return f"[{getattr(block, 'type', 'content')}]"  # a block type newer than this client


def _clean(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"
