"""Built-in tools: files, search, shell commands and the todo list, scoped to a working directory."""

from __future__ import annotations

from ironhive.adapters.tools.provider import READ_ONLY_TOOL_NAMES, BuiltInToolProvider

__all__ = ["READ_ONLY_TOOL_NAMES", "BuiltInToolProvider"]
