"""The on-disk cache of llama.cpp's evaluated prompt state, keyed by model identity, context settings and tokens.

Each entry is one file: a fixed header (magic, format version, the identity digest, token count, state length and a
SHA-256 of everything after the header), the tokens (int32, little-endian), then the bytes of
``llama_state_get_data`` (the KV cache of exactly those tokens). Only those bytes are kept, never llama-cpp-python's
``LlamaState`` pickles (which carry a logits array of ~100 MB). Entries of one identity share a folder named by its
digest, so a lookup reads only headers and tokens of entries that fit the loaded model.

Safety:

- Concurrent runs: an entry is written to a temporary file in the same folder and renamed into place, so a reader
  sees a whole old file or a whole new one. Deleting a file another process is reading is harmless on POSIX.
- Stale or corrupt files: the size, the header and the checksum are verified before any byte reaches llama.cpp; a
  file that fails is deleted (and rebuilt by the next save).
- Bounded: after a save the oldest entries (by last use: a load touches the file's mtime) are deleted until all
  entries together fit ``max_bytes``. An entry whose tokens are a prefix of a newer entry's is superseded, and deleted.
- Private: the folders are 0700, the files 0600.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ironhive.adapters.atomic_files import atomic_writer, is_temporary

DEFAULT_MAX_BYTES: Final = 512 * 1024 * 1024
"""The default bound of the whole cache."""

MAGIC: Final = b"IHPFXST\x00"
VERSION: Final = 1
# magic, version, identity digest, token count, state length, checksum
_HEADER: Final = struct.Struct("<8sH32sIQ32s")
_SUFFIX: Final = ".state"
_STALE_TEMP_SECONDS: Final = 600


def default_cache_dir(home: Path) -> Path:
    """The folder of the prefix cache: ``<home>/.ironhive/cache/llamacpp-prefix``."""
    return home / ".ironhive" / "cache" / "llamacpp-prefix"


def identity_digest(parts: Iterable[str]) -> bytes:
    """The 32-byte digest naming an identity (model file identity plus context settings), from its parts."""
    digest = hashlib.sha256()
    for part in parts:
        encoded = part.encode("utf-8")
        digest.update(struct.pack("<I", len(encoded)) + encoded)
    return digest.digest()


def model_file_identity(path: Path, *, header_bytes: int = 1 << 20) -> list[str]:
    """Parts that identify a model file: resolved path, size, mtime and a hash of its first MiB."""
    resolved = path.resolve()
    stat = resolved.stat()
    with resolved.open("rb") as file:
        head = hashlib.sha256(file.read(header_bytes)).hexdigest()
    return [str(resolved), str(stat.st_size), str(stat.st_mtime_ns), head]


@dataclass(frozen=True, kw_only=True, slots=True)
class PrefixMatch:
    """The cached entry sharing the longest prefix with a prompt.

    Attributes:
        path: The entry's file.
        common: Tokens the entry and the prompt share from the start.
        entry_tokens: Tokens in the entry.
    """

    path: Path
    common: int
    entry_tokens: int


@dataclass(frozen=True, kw_only=True, slots=True)
class CachedState:
    """A verified entry: its tokens and llama.cpp state bytes."""

    tokens: list[int]
    state: bytes


class PrefixStateCache:
    """Evaluated prompt states on disk, for one identity (see the module docstring).

    Args:
        root: The cache folder (all identities); created 0700 on first save.
        identity: The digest of the model identity and context settings (:func:`identity_digest`).
        max_bytes: The bound of all entries of all identities together.
    """

    def __init__(self, root: Path, identity: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if len(identity) != 32:
            raise ValueError("identity must be a 32-byte digest")
        self._root = root
        self._identity = identity
        self._folder = root / identity.hex()[:32]
        self._max_bytes = max_bytes

    @property
    def folder(self) -> Path:
        """The folder of this identity's entries."""
        return self._folder

    def entries(self) -> list[Path]:
        """This identity's entry files."""
        try:
            return sorted(path for path in self._folder.iterdir() if path.name.endswith(_SUFFIX))
        except OSError:
            return []

    def most_recent(self) -> Path | None:
        """The entry used (loaded or saved) last, if there is one."""
        newest: tuple[float, Path] | None = None
        for path in self.entries():
            with contextlib.suppress(OSError):
                used = path.stat().st_mtime
                if newest is None or used > newest[0]:
                    newest = (used, path)
        return newest[1] if newest is not None else None

    def best_match(self, tokens: Sequence[int]) -> PrefixMatch | None:
        """The entry sharing the longest prefix with ``tokens`` (reads headers and tokens only); ``None`` if none.

        An entry whose header or size is wrong is deleted on the way.
        """
        wanted = _token_bytes(tokens)
        best: PrefixMatch | None = None
        for path in self.entries():
            entry = self._read_tokens(path)
            if entry is None:
                continue
            common = _common_prefix(entry, wanted)
            if common and (best is None or common > best.common):
                best = PrefixMatch(path=path, common=common, entry_tokens=len(entry) // 4)
        return best

    def load(self, path: Path) -> CachedState | None:
        """Read and verify one entry; a file that fails verification is deleted and ``None`` returned."""
        try:
            data = path.read_bytes()
        except OSError:
            return None
        parsed = self._parse(data, full=True)
        if parsed is None:
            _unlink(path)
            return None
        token_bytes, state = parsed
        with contextlib.suppress(OSError):
            os.utime(path)  # last use, for the LRU bound
        tokens = list(struct.unpack(f"<{len(token_bytes) // 4}i", token_bytes))
        return CachedState(tokens=tokens, state=state)

    def discard(self, path: Path) -> None:
        """Delete an entry llama.cpp refused (its bytes did not fit the loaded context)."""
        _unlink(path)

    def save(self, tokens: Sequence[int], state: bytes) -> Path | None:
        """Store ``state`` (the evaluated ``tokens``) atomically, then keep the cache within its bound.

        Returns:
            The entry's file, or ``None`` when the state alone is larger than the bound.
        """
        token_bytes = _token_bytes(tokens)
        size = _HEADER.size + len(token_bytes) + len(state)
        if size > self._max_bytes:
            return None
        _private_dir(self._root)
        _private_dir(self._folder)
        checksum = hashlib.sha256(token_bytes)
        checksum.update(state)
        header = _HEADER.pack(MAGIC, VERSION, self._identity, len(tokens), len(state), checksum.digest())
        name = hashlib.sha256(self._identity + token_bytes).hexdigest()[:40] + _SUFFIX
        target = self._folder / name
        with atomic_writer(target, private=True, durable=False) as file:  # a damaged entry is found and rebuilt
            file.write(header)
            file.write(token_bytes)
            file.write(state)
        self._drop_superseded(target, token_bytes)
        self.evict()
        return target

    def evict(self) -> None:
        """Delete least recently used entries (all identities) until the cache fits its bound; clear stale temps."""
        files: list[tuple[float, int, Path]] = []
        now = time.time()
        try:
            folders = [path for path in self._root.iterdir() if path.is_dir()]
        except OSError:
            return
        for folder in folders:
            try:
                children = list(folder.iterdir())
            except OSError:
                continue
            for path in children:
                try:
                    stat = path.stat()
                except OSError:
                    continue
                if is_temporary(path.name):
                    if now - stat.st_mtime > _STALE_TEMP_SECONDS:
                        _unlink(path)  # left by a run that was killed while writing
                elif path.name.endswith(_SUFFIX):
                    files.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self._max_bytes:
                break
            _unlink(path)
            total -= size

    def _drop_superseded(self, keep: Path, token_bytes: bytes) -> None:
        for path in self.entries():
            if path == keep:
                continue
            entry = self._read_tokens(path)
            if entry is not None and len(entry) < len(token_bytes) and token_bytes.startswith(entry):
                _unlink(path)

    def _read_tokens(self, path: Path) -> bytes | None:
        """The token bytes of an entry after checking its header and size (not the checksum); deletes a bad file."""
        try:
            with path.open("rb") as file:
                header = file.read(_HEADER.size)
                fields = self._header_fields(header, os.fstat(file.fileno()).st_size)
                if fields is None:
                    raise ValueError("bad header")
                n_tokens, _ = fields
                token_bytes = file.read(n_tokens * 4)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            _unlink(path)
            return None
        return token_bytes

    def _header_fields(self, header: bytes, file_size: int) -> tuple[int, int] | None:
        if len(header) != _HEADER.size:
            return None
        magic, version, identity, n_tokens, state_length, _ = _HEADER.unpack(header)
        if magic != MAGIC or version != VERSION or identity != self._identity:
            return None
        if file_size != _HEADER.size + n_tokens * 4 + state_length or n_tokens == 0:
            return None
        return n_tokens, state_length

    def _parse(self, data: bytes, *, full: bool) -> tuple[bytes, bytes] | None:
        fields = self._header_fields(data[: _HEADER.size], len(data))
        if fields is None:
            return None
        n_tokens, _ = fields
        checksum = _HEADER.unpack(data[: _HEADER.size])[5]
        body = memoryview(data)[_HEADER.size :]
        if full and hashlib.sha256(body).digest() != checksum:
            return None
        return bytes(body[: n_tokens * 4]), bytes(body[n_tokens * 4 :])


def _token_bytes(tokens: Sequence[int]) -> bytes:
    return struct.pack(f"<{len(tokens)}i", *tokens)


def _common_prefix(left: bytes, right: bytes) -> int:
    """Tokens two token byte strings share from the start (binary search on slice equality, done in C)."""
    low, high = 0, min(len(left), len(right)) // 4
    while low < high:
        middle = (low + high + 1) // 2
        if left[: middle * 4] == right[: middle * 4]:
            low = middle
        else:
            high = middle - 1
    return low


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
