"""BuiltInToolProvider: the set of built-in tools and what the model is told about them."""

from __future__ import annotations

from pathlib import Path

from ironhive.adapters.tools import READ_ONLY_TOOL_NAMES, BuiltInToolProvider
from ironhive.ports.tools import Tool, ToolProvider

EXPECTED = {
    "read_file": ({"path", "start_line", "line_count"}, ["path"]),
    "write_file": ({"path", "content", "append"}, ["path", "content"]),
    "edit_file": ({"path", "old_string", "new_string", "replace_all"}, ["path", "old_string", "new_string"]),
    "delete_file": ({"path"}, ["path"]),
    "list_directory": ({"path", "recursive", "include_ignored"}, []),
    "glob_files": ({"pattern", "path", "include_ignored"}, ["pattern"]),
    "grep_files": ({"pattern", "file_pattern", "path", "include_ignored"}, ["pattern"]),
    "execute_command": ({"command", "timeout_ms"}, ["command"]),
    "manage_todo": ({"action", "task", "id", "status", "priority", "dependencies"}, ["action"]),
}


async def test_provides_every_tool_in_a_stable_order(tmp_path: Path) -> None:
    provider = BuiltInToolProvider(tmp_path)
    assert isinstance(provider, ToolProvider)
    tools = await provider.get_tools()
    assert [tool.spec.name for tool in tools] == list(EXPECTED)
    assert [tool.spec.name for tool in await provider.get_tools()] == list(EXPECTED)


async def test_each_tool_declares_its_parameters_and_required_ones(tmp_path: Path) -> None:
    for tool in await BuiltInToolProvider(tmp_path).get_tools():
        assert isinstance(tool, Tool)
        properties, required = EXPECTED[tool.spec.name]
        schema = tool.spec.parameters
        assert schema["type"] == "object"
        assert schema["required"] == required
        assert 20 < len(tool.spec.description) < 300
        declared = schema["properties"]
        assert isinstance(declared, dict)
        assert set(declared) == properties
        for prop in declared.values():
            assert isinstance(prop, dict)
            assert prop["type"] in ("string", "integer", "boolean")
            assert prop["description"]


async def test_read_only_names_are_provided_tools(tmp_path: Path) -> None:
    names = {tool.spec.name for tool in await BuiltInToolProvider(tmp_path).get_tools()}
    assert READ_ONLY_TOOL_NAMES == ("read_file", "list_directory", "glob_files", "grep_files")
    assert set(READ_ONLY_TOOL_NAMES) <= names


async def test_tools_share_the_root(tmp_path: Path) -> None:
    tools = {tool.spec.name: tool for tool in await BuiltInToolProvider(tmp_path).get_tools()}
    await tools["write_file"].invoke({"path": "notes/a.txt", "content": "shared root\n"})
    assert await tools["read_file"].invoke({"path": "notes/a.txt"}) == "shared root\n"
    assert "notes/a.txt" in await tools["glob_files"].invoke({"pattern": "**/*.txt"})
    assert "notes/a.txt:1: shared root" in await tools["grep_files"].invoke({"pattern": "shared"})
    assert "shared root" in await tools["execute_command"].invoke({"command": "cat notes/a.txt"})
    await tools["manage_todo"].invoke({"action": "add", "task": "t"})
    assert (tmp_path / ".ironhive" / "todo.json").is_file()
