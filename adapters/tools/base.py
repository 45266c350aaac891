"""What every built-in tool shares: its spec, argument validation, path resolution against the root, OS errors."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Protocol

from ironhive.adapters.tools.arguments import Arguments, validate_arguments
from ironhive.domain.errors import ToolArgumentError, ToolError
from ironhive.domain.permissions.paths import ResolvedPath, judged_path, resolve_path, resolve_root
from ironhive.domain.permissions.rules import PermissionAction
from ironhive.ports.chat import JsonValue, ToolSpec

MAX_TEXT_BYTES = 1024 * 1024
"""The largest file the file tools read or edit whole (1 MB)."""

_SNIFF_BYTES = 8192


class ReadRules(Protocol):
    """The read permission rules, as the walking tools (list, glob, grep) apply them to each entry they meet."""

    def judge_read(self, path: str) -> PermissionAction:
        """What the read rules say about reading ``path`` (an absolute path), as they would for a ``read_file``."""
        ...


class AllowAllReads:
    """The read rules of a tool used without a permission policy: everything may be read."""

    def judge_read(self, path: str) -> PermissionAction:
        """Always allow."""
        return PermissionAction.ALLOW


class BuiltInTool(ABC):
    """Base of the built-in tools: a fixed spec, validated arguments and a working directory.

    Subclasses set ``name``, ``description`` and ``parameters`` and implement ``_run``. Relative paths resolve against
    ``root``, never against the process's current directory; absolute paths are used as given (whether a path outside
    the root may be touched is the permission engine's decision, not the tool's). A path is resolved once: the tool
    acts on the resolution the permission rules judged (see ``ironhive.domain.permissions.paths``) and opens it
    without following links (``ironhive.adapters.tools.safe_open``).

    Args:
        root: The working directory. A relative root is made absolute once, here.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[Mapping[str, JsonValue]]

    def __init__(self, root: Path) -> None:
        self._root = Path(os.path.abspath(root))
        self._real_root = resolve_root(self._root)
        self._spec = ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    @property
    def root(self) -> Path:
        """The working directory relative paths resolve against."""
        return self._root

    @property
    def spec(self) -> ToolSpec:
        """The tool's name, description and JSON schema, as the model sees them."""
        return self._spec

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        """Validate the arguments against the schema, then run the tool.

        Raises:
            ToolArgumentError: The arguments do not fit the schema.
            ToolError: The tool ran and failed.
        """
        validated = validate_arguments(self.name, self.parameters, arguments)
        try:
            return await self._run(validated)
        except OSError as exc:
            raise ToolError(self._describe_os_error(exc)) from exc

    @abstractmethod
    async def _run(self, arguments: Arguments) -> str:
        """Do the tool's work with arguments that fit the schema."""

    def resolve(self, path: str, parameter: str = "path", *, follow_last: bool = True) -> ResolvedPath:
        """Resolve a path the model sent: the resolution the rules judged for this call, else resolved here, once.

        Args:
            path: The path argument (relative to the root, absolute, or starting with ``~``).
            parameter: The parameter's name, for error messages.
            follow_last: Follow a link in the last component (false for deleting the link itself).

        Raises:
            ToolArgumentError: The path is empty or cannot be resolved.
        """
        if not path.strip():
            raise ToolArgumentError(f"Parameter '{parameter}' of tool '{self.name}' is empty", parameter=parameter)
        if "\0" in path:
            raise ToolArgumentError(
                f"Parameter '{parameter}' of tool '{self.name}' contains a NUL character", parameter=parameter
            )
        resolved = judged_path(self._real_root, path, follow_last=follow_last) or resolve_path(
            self._real_root, path, follow_last=follow_last
        )
        if resolved is None:
            raise ToolArgumentError(
                f"Parameter '{parameter}' of tool '{self.name}' is not a usable path", parameter=parameter
            )
        return resolved

    def _describe_os_error(self, exc: OSError) -> str:
        reason = exc.strerror or type(exc).__name__
        target = exc.filename
        if isinstance(target, str | os.PathLike):
            return f"{self.name} failed: {reason}: {self._display(Path(os.fsdecode(target)))}"
        return f"{self.name} failed: {reason}"

    def _display(self, path: Path) -> str:
        """Show a path relative to the root when it is inside it, absolute otherwise."""
        for root in (self._root, Path(self._real_root)):
            if path.is_relative_to(root):
                return path.relative_to(root).as_posix() or "."
        return str(path)


def looks_binary(head: bytes) -> bool:
    """Whether a file's first bytes say it is not text (a NUL byte outside a UTF-16 text file)."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    return b"\x00" in head


def sniff(path: Path) -> bytes:
    """The first few KB of a file, enough to tell text from binary and find a byte-order mark."""
    with path.open("rb") as handle:
        return handle.read(_SNIFF_BYTES)


def text_encoding(head: bytes) -> str:
    """The codec to decode a text file with, chosen by its byte-order mark (UTF-8 without one)."""
    if head.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    return "utf-8"


def human_size(size: int) -> str:
    """A byte count as people write it: ``512 B``, ``1.2 KB``, ``3.4 MB``."""
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KB", "MB", "GB"):
        if round(value, 1) < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"
