"""Trust in project files: one store of trusted file contents, and the rule of which files need it.

A cloned repository is untrusted until its user trusts it. Its files that could widen rights, redirect the user's
credentials or run code (``.ironhive/config.yaml``, ``.ironhive/permissions.*``, its plugin file, ``.env``) take
effect only when their exact content is trusted: :class:`TrustStore` remembers the absolute path and the SHA-256 of
the bytes (any edit, the model's included, needs trusting again). ``ironhive trust`` trusts a project's files,
``ironhive mcp trust`` one plugin file; a terminal run asks once.

Decided on purpose:

- Files under the user's own ``~/.ironhive`` are the user's, always trusted (also when the project *is* the home).
- ``IRONHIVE_TRUST_PROJECT=1`` in the real environment (never from a ``.env``, which is parsed and not loaded) trusts
  every project file for that run without remembering anything: for CI and scripts that check out their own code.
- A file the user declined on the terminal is not asked about again in the same process.
- The store is ``~/.ironhive/trust.json``, owner-only (0600, its folder 0700); the records of the older
  ``trusted-plugins.json`` are read and moved into it on the next write. Each change holds ``trust.json.lock``
  (filelock) from read to write, so concurrent changes from several processes all land; the write is atomic.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeAlias

from ironhive.adapters.atomic_files import write_atomically
from ironhive.adapters.config.private_files import make_private_directory
from ironhive.adapters.config.safe_files import UnsafeFileError, load_json, read_limited_bytes
from ironhive.ports.system import Clock

logger = logging.getLogger(__name__)

TRUST_FILE_NAME = "trust.json"
LEGACY_TRUST_FILE_NAME = "trusted-plugins.json"
TRUST_PROJECT_VARIABLE = "IRONHIVE_TRUST_PROJECT"
"""Set to ``1`` (or ``true``/``yes``) to trust every project file for one run."""

_FORMAT_VERSION = 1
_LOCK_SECONDS = 60.0
_TRUTHY = frozenset({"1", "true", "yes", "on"})

TrustState: TypeAlias = Literal["trusted", "changed", "untrusted"]
"""``trusted``: this path with this content. ``changed``: this path was trusted with other content.
``untrusted``: never trusted."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TrustRecord:
    """A remembered trust: this path, with this content, was trusted at this time."""

    path: Path
    sha256: str
    trusted_at: datetime


def sha256_of(data: bytes) -> str:
    """The hex SHA-256 that trust records keep."""
    return hashlib.sha256(data).hexdigest()


class TrustStore:
    """Remembers trusted files by absolute path and SHA-256 of their content, in a JSON file.

    Reads and writes are synchronous file I/O (run them off the event loop in async code). A store that cannot be
    parsed counts as empty (nothing is trusted) and is rewritten on the next ``trust``.

    Args:
        path: The store's file (``~/.ironhive/trust.json`` when omitted; see also ``for_home``).
        clock: Where ``trusted_at`` comes from (the system clock when omitted).
    """

    def __init__(self, path: Path | None = None, *, clock: Clock | None = None) -> None:
        self._path = path if path is not None else Path.home() / ".ironhive" / TRUST_FILE_NAME
        self._clock = clock

    @classmethod
    def for_home(cls, home: Path, *, clock: Clock | None = None) -> TrustStore:
        """The store of the user whose home directory is ``home``: ``<home>/.ironhive/trust.json``."""
        return cls(home / ".ironhive" / TRUST_FILE_NAME, clock=clock)

    @property
    def path(self) -> Path:
        """The store's file."""
        return self._path

    @property
    def _legacy_path(self) -> Path:
        return self._path.with_name(LEGACY_TRUST_FILE_NAME)

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
        """Trust ``file`` with the content it has now.

        Raises:
            OSError: The file cannot be read (``UnsafeFileError`` included), or the store cannot be written.
        """
        try:
            data = read_limited_bytes(file)
        except UnsafeFileError as error:
            raise OSError(str(error)) from error
        if data is None:
            raise FileNotFoundError(f"No such file: {file}")
        return self.remember(file, sha256_of(data))

    def remember(self, file: Path, sha256: str) -> TrustRecord:
        """Trust ``file`` with the content that hashes to ``sha256`` (replacing an older trust of the same path).

        Raises:
            OSError: The store cannot be written.
        """
        now = self._clock.now() if self._clock is not None else datetime.now(UTC)
        record = TrustRecord(path=Path(_key(file)), sha256=sha256, trusted_at=now)
        with self._locked():
            records = self._read()
            records[_key(file)] = record
            self._write(records)
        return record

    def revoke(self, file: Path) -> bool:
        """Forget any trust of ``file``; whether there was one.

        Raises:
            OSError: The store cannot be written.
        """
        with self._locked():
            records = self._read()
            if records.pop(_key(file), None) is None:
                return False
            self._write(records)
        return True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the store's lock file (``trust.json.lock``, owner-only) for one read-modify-write.

        Two processes trusting at once (``ironhive mcp trust`` twice) would otherwise each read the store, add their
        record and write it back, and the later write would drop the earlier record.

        Raises:
            OSError: The folder or the lock file cannot be made, or the lock is not free within a minute.
        """
        from filelock import FileLock, Timeout

        make_private_directory(self._path.parent)
        lock = FileLock(self._path.with_name(self._path.name + ".lock"), timeout=_LOCK_SECONDS, mode=0o600)
        try:
            with lock:
                yield
        except Timeout as error:
            raise OSError(f"The trust store {self._path} is locked by another process: {error}") from error

    def _read(self) -> dict[str, TrustRecord]:
        records = self._read_file(self._legacy_path)
        records.update(self._read_file(self._path))
        return records

    def _read_file(self, path: Path) -> dict[str, TrustRecord]:
        try:
            data = read_limited_bytes(path)
            if data is None:
                return {}
            document = load_json(data.decode("utf-8"))
        except (UnsafeFileError, UnicodeDecodeError, ValueError) as error:
            logger.warning("Ignoring unreadable trust store %s (nothing counts as trusted): %s", path, error)
            return {}
        files = document.get("files") if isinstance(document, dict) else None
        if not isinstance(files, dict):
            logger.warning("Ignoring trust store %s: it has no 'files' mapping", path)
            return {}
        records: dict[str, TrustRecord] = {}
        for key, entry in files.items():
            record = _parse_record(key, entry)
            if record is not None:
                records[key] = record
        return records

    def _write(self, records: Mapping[str, TrustRecord]) -> None:
        document = {
            "version": _FORMAT_VERSION,
            "files": {
                key: {"sha256": record.sha256, "trustedAt": record.trusted_at.isoformat()}
                for key, record in sorted(records.items())
            },
        }
        write_atomically(self._path, json.dumps(document, indent=2) + "\n", private=True)
        with contextlib.suppress(FileNotFoundError):
            self._legacy_path.unlink()  # its records are in the new file now


def trust_all_requested(environ: Mapping[str, str]) -> bool:
    """Whether the environment asks to trust every project file for this run (``IRONHIVE_TRUST_PROJECT=1``)."""
    return environ.get(TRUST_PROJECT_VARIABLE, "").strip().lower() in _TRUTHY


_DECLINED: set[tuple[str, str]] = set()
"""(path, sha256) of files declined on the terminal in this process: not asked about again."""


def decline(file: Path, sha256: str) -> None:
    """Remember, for this process, that the user declined to trust this content of ``file``."""
    _DECLINED.add((_key(file), sha256))


def was_declined(file: Path, sha256: str) -> bool:
    """Whether the user declined this content of ``file`` earlier in this process."""
    return (_key(file), sha256) in _DECLINED


@dataclass(frozen=True, kw_only=True, slots=True)
class ProjectTrust:
    """Decides whether one project file, with the content that was read, may take effect.

    Attributes:
        home: The user's home directory; files under its ``.ironhive`` folder are the user's own.
        store: The remembered trusts.
        trust_all: Trust every file for this run (``IRONHIVE_TRUST_PROJECT=1``).
    """

    home: Path
    store: TrustStore
    trust_all: bool = False
    _user_directory: Path = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_user_directory", _resolved(self.home / ".ironhive"))

    @classmethod
    def for_user(cls, *, home: Path | None = None, environ: Mapping[str, str] | None = None) -> ProjectTrust:
        """The trust of the user whose home is ``home`` (``Path.home()``), as ``environ`` (``os.environ``) says."""
        user_home = home if home is not None else Path.home()
        values = environ if environ is not None else os.environ
        return cls(home=user_home, store=TrustStore.for_home(user_home), trust_all=trust_all_requested(values))

    def is_user_file(self, file: Path) -> bool:
        """Whether ``file`` lies in the user's own ``~/.ironhive`` folder."""
        return _resolved(file).is_relative_to(self._user_directory)

    def is_trusted(self, file: Path, sha256: str) -> bool:
        """Whether ``file``, whose content read hashes to ``sha256``, may take effect."""
        if self.trust_all or self.is_user_file(file):
            return True
        try:
            return self.store.is_trusted(file, sha256)
        except OSError:
            return False


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def _key(file: Path) -> str:
    return str(_resolved(file))


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
