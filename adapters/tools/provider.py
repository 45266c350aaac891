"""The built-in tool provider: every built-in tool, scoped to one working directory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ironhive.adapters.tools.base import BuiltInTool
from ironhive.adapters.tools.files import DeleteFileTool, EditFileTool, ReadFileTool, WriteFileTool
from ironhive.adapters.tools.sandbox import CommandSandbox
from ironhive.adapters.tools.search import GlobFilesTool, GrepFilesTool, ListDirectoryTool
from ironhive.adapters.tools.shell import ExecuteCommandTool
from ironhive.adapters.tools.todo import ManageTodoTool
from ironhive.ports.system import Clock
from ironhive.ports.tools import Tool

READ_ONLY_TOOL_NAMES = ("read_file", "list_directory", "glob_files", "grep_files")
"""The built-in tools that never change anything: planning mode may run them."""


class BuiltInToolProvider:
    """The ``ToolProvider`` of the built-in tools, all working on one directory.

    Args:
        root: The working directory: relative paths resolve against it and commands run in it.
        clock: Where the todo list's timestamps come from (the system clock when omitted).
        sandbox: Where ``execute_command`` runs its commands (unsandboxed when omitted).
    """

    def __init__(self, root: Path, *, clock: Clock | None = None, sandbox: CommandSandbox | None = None) -> None:
        self._tools: tuple[BuiltInTool, ...] = (
            ReadFileTool(root),
            WriteFileTool(root),
            EditFileTool(root),
            DeleteFileTool(root),
            ListDirectoryTool(root),
            GlobFilesTool(root),
            GrepFilesTool(root),
            ExecuteCommandTool(root, sandbox=sandbox),
            ManageTodoTool(root, clock=clock),
        )

    async def get_tools(self) -> Sequence[Tool]:
        """Return the built-in tools, always the same instances in the same order."""
        return self._tools
