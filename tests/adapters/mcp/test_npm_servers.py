"""McpToolProvider with the npm reference servers (memory, filesystem) over stdio, as users run them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ironhive.adapters.mcp.plugin_config import McpServerConfig
from ironhive.adapters.mcp.provider import McpToolProvider
from ironhive.domain.errors import ToolError
from ironhive.ports.chat import JsonValue


def node_server(name: str, modules: Path, package: str, *arguments: str, **environment: str) -> McpServerConfig:
    node = shutil.which("node")
    assert node is not None, "the npm_servers fixture found node on PATH"
    entry = modules / "@modelcontextprotocol" / package / "dist" / "index.js"
    return McpServerConfig(
        name=name,
        transport="stdio",
        command=node,
        arguments=(str(entry), *arguments),
        environment=environment,
        timeout=20.0,
    )


async def test_the_memory_server_stores_and_reads_a_knowledge_graph(npm_servers: Path, tmp_path: Path) -> None:
    memory_file = tmp_path / "memory.jsonl"
    server = node_server("memory", npm_servers, "server-memory", MEMORY_FILE_PATH=str(memory_file))
    async with McpToolProvider([server]) as provider:
        tools = {tool.spec.name: tool for tool in await provider.get_tools()}
        assert {"mcp__memory__create_entities", "mcp__memory__read_graph", "mcp__memory__search_nodes"} <= set(tools)
        assert tools["mcp__memory__read_graph"].spec.parameters["type"] == "object"
        entity: dict[str, JsonValue] = {
            "name": "Ada Lovelace",
            "entityType": "person",
            "observations": ["wrote the first program"],
        }
        created = json.loads(await tools["mcp__memory__create_entities"].invoke({"entities": [entity]}))
        assert created == [entity]
        graph = json.loads(await tools["mcp__memory__read_graph"].invoke({}))
        assert graph == {"entities": [entity], "relations": []}
        found = json.loads(await tools["mcp__memory__search_nodes"].invoke({"query": "program"}))
        assert [node["name"] for node in found["entities"]] == ["Ada Lovelace"]
    assert "Ada Lovelace" in memory_file.read_text(encoding="utf-8")


async def test_the_filesystem_server_reads_inside_its_root_and_refuses_outside(
    npm_servers: Path, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "note.txt").write_text("hello from disk", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    async with McpToolProvider([node_server("fs", npm_servers, "server-filesystem", str(root))]) as provider:
        tools = {tool.spec.name: tool for tool in await provider.get_tools()}
        read = tools["mcp__fs__read_text_file"]
        assert await read.invoke({"path": str(root / "docs" / "note.txt")}) == "hello from disk"
        listing = await tools["mcp__fs__list_directory"].invoke({"path": str(root)})
        assert listing == "[DIR] docs"
        with pytest.raises(ToolError, match="Access denied"):
            await read.invoke({"path": str(tmp_path / "secret.txt")})
        await tools["mcp__fs__write_file"].invoke({"path": str(root / "new.txt"), "content": "written"})
    assert (root / "new.txt").read_text(encoding="utf-8") == "written"
