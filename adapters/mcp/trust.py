"""Trust in project plugin files: a stdio plugin runs a command, so a project's file runs only once someone trusted it.

A cloned repository can carry ``.ironhive/plugins.yaml``; running its stdio plugins on start-up would run the
repository author's commands. So a *project* file with at least one stdio plugin is started only when its exact
content is trusted: ``TrustStore`` remembers the absolute path and the SHA-256 of the bytes (any edit needs trusting
again), and a ``TrustDecider`` is asked about a file that is not (yet) trusted.

Decided on purpose:

- The global ``~/.ironhive/plugins.yaml`` is the user's own and is always trusted.
- http and sse plugins need no trust: they start no process, and everything they can do happens through tool calls,
  which the permission engine judges (``mcp_tools`` rules) like any other. In an untrusted file only the stdio
  plugins are held back; its http/sse plugins still connect.
- A decider that fails counts as a denial.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Literal, Protocol, TypeAlias

from ironhive.adapters.mcp.plugin_config import McpServerConfig, MergedPlugins, PluginFile
from ironhive.adapters.mcp.status import McpServerStatus
from ironhive.ports.system import Clock

logger = logging.getLogger(__name__)

TRUST_FILE_NAME = "trusted-plugins.json"
_FORMAT_VERSION = 1

TrustState: TypeAlias = Literal["trusted", "changed", "untrusted"]
"""``trusted``: this path with this content. ``changed``: this path was trusted with other content.
``untrusted``: never trusted."""


class TrustDecision(StrEnum):
    """A decider's answer about one plugin file."""

    ALWAYS = "always"
    """Run it, and remember this content as trusted."""
    ONCE = "once"
    """Run it this time only."""
    DENY = "deny"
    """Do not run its stdio plugins."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TrustRequest:
    """What a decider is asked: may this project plugin file start these commands?

    Attributes:
        path: The plugin file's absolute path.
        sha256: Hex SHA-256 of the content that would run.
        commands: One line per stdio plugin: ``<name>: <command line>``.
        changed: Whether the same path was trusted before with different content.
    """

    path: Path
    sha256: str
    commands: tuple[str, ...]
    changed: bool


class TrustDecider(Protocol):
    """Decides whether an untrusted project plugin file may start its stdio plugins (a prompt, a wire request...)."""

    async def decide(self, request: TrustRequest) -> TrustDecision:
        """Answer for one file.

        Args:
            request: The file, its hash and the commands it would run.

        Returns:
            The decision.
        """
        ...


class AlwaysDeny:
    """The decider used when nobody can be asked: untrusted stdio plugins never start."""

    async def decide(self, request: TrustRequest) -> TrustDecision:
        """Deny every file."""
        return TrustDecision.DENY


@dataclass(frozen=True, kw_only=True, slots=True)
class TrustRecord:
    """A remembered trust: this path, with this content, was trusted at this time."""

    path: Path
    sha256: str
    trusted_at: datetime


class TrustStore:
    """Remembers trusted plugin files by absolute path and SHA-256 of their content, in a JSON file.

    Reads and writes are synchronous file I/O (run them off the event loop in async code). A file that cannot be
    parsed counts as empty (nothing is trusted) and is rewritten on the next ``trust``.

    Args:
        path: The store's file (``~/.ironhive/trusted-plugins.json`` when omitted; see also ``for_home``).
        clock: Where ``trusted_at`` comes from (the system clock when omitted).
    """

    def __init__(self, path: Path | None = None, *, clock: Clock | None = None) -> None:
        self._path = path if path is not None else Path.home() / ".ironhive" / TRUST_FILE_NAME
        self._clock = clock

    @classmethod
    def for_home(cls, home: Path, *, clock: Clock | None = None) -> TrustStore:
        """The store of the user whose home directory is ``home``: ``<home>/.ironhive/trusted-plugins.json``."""
        return cls(home / ".ironhive" / TRUST_FILE_NAME, clock=clock)

    @property
    def path(self) -> Path:
        """The store's file."""
        return self._path

    def records(self) -> tuple[TrustRecord, ...]:
        """Every remembered trust."""
        return tuple(self._read().values())

    def state(self, file: Path, sha256: str) -> TrustState:
        """Whether ``file`` with content hashing to ``sha256`` is trusted, was trusted with other content, or never."""
        record = self._read().get(_key(file))
        if record is None:
            return "untrusted"
        return "trusted" if record.sha256 == sha256 else "changed"

    def is_trusted(self, file: Path, sha256: str) -> bool:
        """Whether ``file`` with content hashing to ``sha256`` is trusted."""
        return self.state(file, sha256) == "trusted"

    def trust(self, file: Path) -> TrustRecord:
        """Trust ``file`` with the content it has now (what ``ironhive mcp trust`` does).

        Raises:
            OSError: The file cannot be read, or the store cannot be written.
        """
        return self.remember(file, hashlib.sha256(file.read_bytes()).hexdigest())

    def remember(self, file: Path, sha256: str) -> TrustRecord:
        """Trust ``file`` with the content that hashes to ``sha256`` (replacing an older trust of the same path).

        Raises:
            OSError: The store cannot be written.
        """
        now = self._clock.now() if self._clock is not None else datetime.now(UTC)
        record = TrustRecord(path=Path(_key(file)), sha256=sha256, trusted_at=now)
        records = self._read()
        records[_key(file)] = record
        self._write(records)
        return record

    def revoke(self, file: Path) -> bool:
        """Forget any trust of ``file``; whether there was one.

        Raises:
            OSError: The store cannot be written.
        """
        records = self._read()
        if records.pop(_key(file), None) is None:
            return False
        self._write(records)
        return True

    def _read(self) -> dict[str, TrustRecord]:
        try:
            document = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            logger.warning(
                "Ignoring unreadable plugin trust store %s (nothing counts as trusted): %s", self._path, error
            )
            return {}
        files = document.get("files") if isinstance(document, dict) else None
        if not isinstance(files, dict):
            logger.warning("Ignoring plugin trust store %s: it has no 'files' mapping", self._path)
            return {}
        records: dict[str, TrustRecord] = {}
        for path, entry in files.items():
            record = _parse_record(path, entry)
            if record is not None:
                records[path] = record
        return records

    def _write(self, records: Mapping[str, TrustRecord]) -> None:
        document = {
            "version": _FORMAT_VERSION,
            "files": {
                key: {"sha256": record.sha256, "trustedAt": record.trusted_at.isoformat()}
                for key, record in sorted(records.items())
            },
        }
        self._path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".trusted-plugins-", dir=self._path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(document, stream, indent=2)
                stream.write("\n")
            os.chmod(temporary, 0o600)
            os.replace(temporary, self._path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


@dataclass(frozen=True, kw_only=True, slots=True)
class TrustOutcome:
    """Which merged servers may start, and a status for each one held back.

    Attributes:
        allowed: The servers to connect.
        refused: The stdio servers of untrusted files, as ``untrusted`` statuses.
    """

    allowed: tuple[McpServerConfig, ...]
    refused: tuple[McpServerStatus, ...]


async def check_trust(merged: MergedPlugins, store: TrustStore, decider: TrustDecider) -> TrustOutcome:
    """Hold back the stdio servers of project files that are not trusted and that the decider does not allow.

    Args:
        merged: The servers of the plugin files.
        store: The remembered trusts (read, and written on a ``TrustDecision.ALWAYS``).
        decider: Asked once per untrusted project file that would start a process.

    Returns:
        The servers that may start and statuses for the refused ones.
    """
    by_file: dict[Path, tuple[PluginFile, list[McpServerConfig]]] = {}
    for server, plugin_file in merged.servers:
        if plugin_file.scope == "project" and server.transport == "stdio":
            by_file.setdefault(plugin_file.path, (plugin_file, []))[1].append(server)
    refused_names: set[str] = set()
    refused: list[McpServerStatus] = []
    for plugin_file, servers in by_file.values():
        if await _file_allowed(plugin_file, servers, store, decider):
            continue
        names = ", ".join(server.name for server in servers)
        logger.warning(
            "Not starting the MCP plugin(s) %s from %s: the file is not trusted (or changed since it was trusted). "
            "Review it, then run `ironhive mcp trust %s` to allow it.",
            names,
            plugin_file.path,
            plugin_file.path,
        )
        message = f"{plugin_file.path} is not trusted; review it, then run `ironhive mcp trust {plugin_file.path}`"
        for server in servers:
            refused_names.add(server.name)
            refused.append(
                McpServerStatus(
                    name=server.name,
                    transport=server.transport,
                    state="untrusted",
                    last_error=message,
                    source=plugin_file.path,
                )
            )
    allowed = tuple(server for server, _ in merged.servers if server.name not in refused_names)
    return TrustOutcome(allowed=allowed, refused=tuple(refused))


async def _file_allowed(
    plugin_file: PluginFile, servers: Sequence[McpServerConfig], store: TrustStore, decider: TrustDecider
) -> bool:
    state = await asyncio.to_thread(store.state, plugin_file.path, plugin_file.sha256)
    if state == "trusted":
        return True
    request = TrustRequest(
        path=plugin_file.path,
        sha256=plugin_file.sha256,
        commands=tuple(command_line(server) for server in servers),
        changed=state == "changed",
    )
    try:
        decision = await decider.decide(request)
    except Exception:
        logger.exception("Deciding trust for %s failed; treating it as denied", plugin_file.path)
        return False
    if decision == TrustDecision.ALWAYS:
        try:
            await asyncio.to_thread(store.remember, plugin_file.path, plugin_file.sha256)
        except OSError as error:
            logger.warning("Could not remember trust of %s in %s: %s", plugin_file.path, store.path, error)
        return True
    return decision == TrustDecision.ONCE


def command_line(server: McpServerConfig) -> str:
    """``<name>: <command> <arguments>`` (shell-quoted), how a stdio plugin is shown to whoever decides on it."""
    return f"{server.name}: {shlex.join([server.command or '', *server.arguments])}"


def _key(file: Path) -> str:
    return str(file.resolve())


def _parse_record(path: object, entry: object) -> TrustRecord | None:
    if not isinstance(path, str) or not isinstance(entry, dict):
        return None
    sha256 = entry.get("sha256")
    trusted_at = entry.get("trustedAt")
    if not isinstance(sha256, str):
        return None
    try:
        when = datetime.fromisoformat(trusted_at) if isinstance(trusted_at, str) else datetime.fromtimestamp(0, UTC)
    except ValueError:
        when = datetime.fromtimestamp(0, UTC)
    return TrustRecord(path=Path(path), sha256=sha256, trusted_at=when)
