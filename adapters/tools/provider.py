"""The built-in tool provider: every built-in tool, scoped to one working directory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ironhive.adapters.tools.base import BuiltInTool, ReadRules
from ironhive.adapters.tools.files import DeleteFileTool, EditFileTool, ReadFileTool, WriteFileTool
from ironhive.adapters.tools.sandbox import CommandSandbox
from ironhive.adapters.tools.search import GlobFilesTool, GrepFilesTool, ListDirectoryTool
from ironhive.adapters.tools.shell import ExecuteCommandTool
from ironhive.adapters.tools.todo import ManageTodoTool
from ironhive.domain.invocation.gate import ToolCallJudge
from ironhive.domain.permissions.rules import PermissionAction
from ironhive.ports.system import Clock
from ironhive.ports.tools import Tool

READ_ONLY_TOOL_NAMES = ("read_file", "list_directory", "glob_files", "grep_files")
"""The built-in tools that never change anything: planning mode may run them."""


class PolicyReadRules:
    """The read rules of a permission policy, for the walking tools: each entry is judged as a ``read_file`` of it.

    Args:
        judge: The policy that judges the agent's tool calls (a ``ToolCallPolicy``), so walks and ``read_file`` never
            disagree.
    """

    def __init__(self, judge: ToolCallJudge) -> None:
        self._judge = judge

    def judge_read(self, path: str) -> PermissionAction:
        """What the policy says about ``read_file`` of ``path``."""
        return self._judge.evaluate("read_file", {"path": path}).action


class BuiltInToolProvider:
    """The ``ToolProvider`` of the built-in tools, all working on one directory.

    Args:
        root: The working directory: relative paths resolve against it and commands run in it.
        clock: Where the todo list's timestamps come from (the system clock when omitted).
        sandbox: Where ``execute_command`` runs its commands (unsandboxed when omitted).
        read_rules: The read rules list_directory, glob_files and grep_files judge every entry by (``PolicyReadRules``
            of the agent's policy); without them they show everything.
    """

    def __init__(
        self,
        root: Path,
        *,
        clock: Clock | None = None,
        sandbox: CommandSandbox | None = None,
        read_rules: ReadRules | None = None,
    ) -> None:
        self._tools: tuple[BuiltInTool, ...] = (
            ReadFileTool(root),
            WriteFileTool(root),
            EditFileTool(root),
            DeleteFileTool(root),
            ListDirectoryTool(root, read_rules=read_rules),
            GlobFilesTool(root, read_rules=read_rules),
            GrepFilesTool(root, read_rules=read_rules),
            ExecuteCommandTool(root, sandbox=sandbox),
            ManageTodoTool(root, clock=clock),
        )

    @property
    def tools(self) -> tuple[BuiltInTool, ...]:
        """The built-in tools, always the same instances in the same order."""
        return self._tools

    async def get_tools(self) -> Sequence[Tool]:
        """Return the built-in tools, always the same instances in the same order."""
        return self._tools
