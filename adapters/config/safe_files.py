"""Reading files a repository may have planted: bounded size, regular files only, YAML and JSON with bounded shape.

Every configuration, permission, plugin and ``.env`` file is read here. A hostile file must not stop or hang start-up,
so before a byte is parsed:

- the file is opened with ``O_NONBLOCK`` (a FIFO opens at once instead of waiting for a writer) and judged by
  ``fstat`` on the open descriptor: anything but a regular file (a FIFO, a device such as ``/dev/zero`` reached
  through a symlink, a directory, a socket) is refused;
- at most :data:`MAX_FILE_BYTES` are read (the size is checked before reading, and again while reading, since a file
  can grow).

YAML goes through :class:`BoundedSafeLoader`: the safe loader, with duplicate keys refused (the last value silently
winning hides what a file says), nesting bounded (a deep document would otherwise end in a ``RecursionError``) and
aliases bounded in number and in how much they expand (an alias bomb would otherwise take minutes and gigabytes).
JSON is checked for nesting before ``json.loads``. Every refusal is an error that names the file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ironhive.domain.errors import ConfigurationError

MAX_FILE_BYTES = 1024 * 1024
"""The largest configuration, permission, plugin or ``.env`` file read (1 MiB)."""

MAX_NESTING = 64
"""The deepest nesting of mappings and lists a YAML or JSON file may have (after aliases are expanded)."""

MAX_ALIASES = 100
"""The most aliases (``*name``) one YAML document may use."""

MAX_EXPANDED_NODES = 100_000
"""The most nodes a YAML document that uses aliases may expand to."""


class UnsafeFileError(ConfigurationError):
    """A file was refused before it was parsed: not a regular file, too large, or unreadable.

    Attributes:
        path: The file.
    """

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"Refusing to read {path}: {problem}")
        self.path = path


def read_at_most(descriptor: int, limit: int) -> bytes:
    """Read an open file to its end, but never more than ``limit + 1`` bytes (more than ``limit``: it is too large).

    Raises:
        OSError: The read failed.
    """
    chunks: list[bytes] = []
    total = 0
    while total <= limit and (chunk := os.read(descriptor, min(65536, limit + 1 - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_limited_bytes(path: Path, *, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of a regular file of at most ``limit`` bytes, without ever blocking.

    Symlinks are followed (a user may link a config file from elsewhere), but what they lead to must be a regular
    file: the check is made on the opened descriptor, so it judges exactly what is read.

    Args:
        path: The file.
        limit: The largest size accepted.

    Returns:
        The content, or ``None`` when the file does not exist (a dangling symlink included).

    Raises:
        UnsafeFileError: The file is not a regular file, is larger than ``limit``, or cannot be read.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UnsafeFileError(path, error.strerror or str(error)) from error
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFileError(path, f"it is {_kind_of(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise UnsafeFileError(path, f"it is larger than {_size(limit)} ({_size(info.st_size)})")
        data = read_at_most(descriptor, limit)
        if len(data) > limit:
            raise UnsafeFileError(path, f"it is larger than {_size(limit)}")
        return data
    except OSError as error:
        raise UnsafeFileError(path, error.strerror or str(error)) from error
    finally:
        os.close(descriptor)


def read_limited_text(path: Path, *, limit: int = MAX_FILE_BYTES) -> str | None:
    """Like :func:`read_limited_bytes`, decoded as UTF-8 (a byte-order mark is dropped).

    Raises:
        UnsafeFileError: As :func:`read_limited_bytes`, or the file is not UTF-8 text.
    """
    data = read_limited_bytes(path, limit=limit)
    return None if data is None else decode_text(path, data)


def decode_text(path: Path, data: bytes) -> str:
    """``data`` as UTF-8 text (without a byte-order mark).

    Raises:
        UnsafeFileError: The bytes are not UTF-8.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UnsafeFileError(path, f"it is not UTF-8 text ({error.reason} at byte {error.start})") from error


# -- YAML -----------------------------------------------------------------------------------------------------------


class YamlLimitError(yaml.MarkedYAMLError):  # type: ignore[misc]  # PyYAML ships no types
    """A YAML document breaks one of the bounds (nesting, aliases, duplicate keys)."""


class _Bounded:
    """The bounds, mixed into a PyYAML loader: duplicate keys, deep nesting and alias expansion are refused."""

    check_event: Any
    peek_event: Any
    construct_object: Any

    def __init__(self, stream: str) -> None:
        super().__init__(stream)  # type: ignore[call-arg]
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Node | None, index: object) -> Node:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise YamlLimitError(problem=f"more than {MAX_ALIASES} aliases", problem_mark=mark)
            return super().compose_node(parent, index)  # type: ignore[misc]
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                mark = self.peek_event().start_mark
                raise YamlLimitError(problem=f"nested deeper than {MAX_NESTING} levels", problem_mark=mark)
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1

    def compose_document(self) -> Node:
        node: Node = super().compose_document()  # type: ignore[misc]
        if self._aliases:
            _check_expansion(node)
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: set[object] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=False)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: the base constructor reports it
                    continue
                if duplicate:
                    raise YamlLimitError(problem=f"duplicate key '{key}'", problem_mark=key_node.start_mark)
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc, no-any-return]


class BoundedSafeLoader(_Bounded, yaml.SafeLoader):  # type: ignore[misc]
    """``yaml.SafeLoader`` that refuses duplicate keys, deep nesting and alias expansion beyond the bounds."""


class BoundedBaseLoader(_Bounded, yaml.BaseLoader):  # type: ignore[misc]
    """``yaml.BaseLoader`` (every scalar a string) with the same bounds."""


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_expansion(root: Node) -> None:
    """Refuse a document whose aliases expand too far, too deep, or into a cycle (iteratively: no recursion)."""
    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            children = _children(node)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            depths[key] = 1 + max((depths[id(child)] for child in children), default=0)
            active.discard(key)
            if sizes[key] > MAX_EXPANDED_NODES:
                raise YamlLimitError(
                    problem=f"aliases expand to more than {MAX_EXPANDED_NODES} values", problem_mark=node.start_mark
                )
            if depths[key] > MAX_NESTING:
                raise YamlLimitError(
                    problem=f"aliases nest deeper than {MAX_NESTING} levels", problem_mark=node.start_mark
                )
            continue
        if key in sizes:
            continue
        if key in active:
            raise YamlLimitError(problem="an alias refers to itself", problem_mark=node.start_mark)
        active.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def load_yaml(text: str, *, strings_only: bool = False) -> object:
    """Parse one YAML document with :class:`BoundedSafeLoader` (a drop-in for ``yaml.safe_load``).

    Args:
        text: The YAML text.
        strings_only: Keep every scalar a string (:class:`BoundedBaseLoader`, as ``yaml.BaseLoader`` does).

    Raises:
        yaml.YAMLError: The text does not parse or breaks a bound (:class:`YamlLimitError`, with a mark).
    """
    loader = BoundedBaseLoader(text) if strings_only else BoundedSafeLoader(text)
    try:
        return loader.get_single_data()
    except RecursionError as error:  # a safety net: the bounds above keep far below the interpreter's limit
        raise YamlLimitError(problem="nested too deeply") from error
    finally:
        loader.dispose()


def yaml_key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The 1-based line of each mapping key of a YAML document, by its path of keys (lists are not entered).

    Warnings about a key name the line with this (the parsed mapping keeps no positions).

    Raises:
        yaml.YAMLError: As :func:`load_yaml`.
    """
    loader = BoundedSafeLoader(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    lines: dict[tuple[str, ...], int] = {}
    stack: list[tuple[tuple[str, ...], Node]] = [((), root)] if root is not None else []
    while stack:  # bounded: composing refused documents that nest or expand too far
        prefix, node = stack.pop()
        if not isinstance(node, MappingNode):
            continue
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode):
                path = (*prefix, str(key_node.value))
                lines.setdefault(path, key_node.start_mark.line + 1)
                stack.append((path, value_node))
    return lines


# -- JSON -----------------------------------------------------------------------------------------------------------

_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKETS = re.compile(r"[\[\]{}]")


class JsonNestingError(ValueError):
    """A JSON text nests deeper than :data:`MAX_NESTING`.

    Attributes:
        line: The 1-based line where the limit is passed.
    """

    def __init__(self, line: int) -> None:
        super().__init__(f"nested deeper than {MAX_NESTING} levels")
        self.line = line


def check_json_nesting(text: str) -> None:
    """Refuse JSON that nests too deeply, before ``json.loads`` recurses into it.

    Raises:
        JsonNestingError: The text nests deeper than :data:`MAX_NESTING`.
    """
    blanked = _JSON_STRING.sub(lambda match: '"' + " " * (len(match.group()) - 2) + '"', text)
    depth = 0
    for match in _JSON_BRACKETS.finditer(blanked):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_NESTING:
            raise JsonNestingError(blanked.count("\n", 0, match.start()) + 1)


def load_json(text: str, **options: Any) -> object:
    """``json.loads`` after :func:`check_json_nesting`.

    Raises:
        JsonNestingError: The text nests too deeply.
        json.JSONDecodeError: The text is not JSON.
    """
    check_json_nesting(text)
    return json.loads(text, **options)


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):.1f} MiB" if count >= 1024 * 1024 else f"{count} bytes"
