"""The bearer token of ``ironhive serve``: configured, from the environment, or generated once (owner-only file)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ironhive.adapters.atomic_files import write_atomically
from ironhive.adapters.config.private_files import make_private_directory, restrict_file, user_directory
from ironhive.domain.errors import ConfigurationError

TOKEN_VARIABLE = "IRONHIVE_SERVER_TOKEN"
"""Environment variable holding the server's bearer token (used when ``server.token`` is unset)."""

TOKEN_FILE = "server-token"
"""The file under ``~/.ironhive`` holding the generated token."""

MIN_TOKEN_LENGTH = 16
"""A configured token shorter than this is refused: it could be guessed."""

TokenSource = Literal["config", "environment", "file", "generated"]


@dataclass(frozen=True, slots=True)
class ServerToken:
    """The token every request but ``/healthz`` must carry, and where it came from.

    Attributes:
        value: The token (never logged, never printed but once when generated).
        source: ``config`` (``server.token``), ``environment`` (``IRONHIVE_SERVER_TOKEN``), ``file`` (generated at an
            earlier start) or ``generated`` (just now, at this start).
        path: The token file, for the ``file`` and ``generated`` sources.
    """

    value: str
    source: TokenSource
    path: Path | None = None

    @property
    def configured(self) -> bool:
        """Whether the user chose the token (config or environment), as a non-loopback bind requires."""
        return self.source in ("config", "environment")

    def __repr__(self) -> str:  # never shows the value
        return f"ServerToken(source={self.source!r}, path={self.path!r})"

    def where(self, home: Path) -> str:
        """Where the token is, as the start-up line says it (``~/.ironhive/server-token``, never the value)."""
        if self.source == "config":
            return "token from server.token"
        if self.source == "environment":
            return f"token from {TOKEN_VARIABLE}"
        shown = str(self.path)
        with contextlib.suppress(ValueError):
            shown = "~/" + str(Path(shown).relative_to(home))
        return f"token in {shown}"


def token_problem(token: str, where: str) -> str | None:
    """Why a configured token cannot be used, or None."""
    if len(token) < MIN_TOKEN_LENGTH:
        return f"{where} must be at least {MIN_TOKEN_LENGTH} characters long"
    if any(ord(character) < 0x21 or ord(character) > 0x7E for character in token):
        return f"{where} must be printable ASCII without spaces (it travels in an Authorization header)"
    return None


def chosen_token(configured: str | None, environ: Mapping[str, str]) -> ServerToken | None:
    """The token the user chose: ``server.token``, else ``IRONHIVE_SERVER_TOKEN``; None when neither is set.

    Raises:
        ConfigurationError: The chosen token is too short or not printable.
    """
    for value, source, where in (
        (configured, "config", "server.token"),
        (environ.get(TOKEN_VARIABLE), "environment", TOKEN_VARIABLE),
    ):
        if value is not None and value.strip():
            if (problem := token_problem(value.strip(), where)) is not None:
                raise ConfigurationError(problem)
            return ServerToken(value.strip(), source)  # type: ignore[arg-type]
    return None


def resolve_token(configured: str | None, environ: Mapping[str, str], home: Path) -> ServerToken:
    """The server's token: ``server.token``, else ``IRONHIVE_SERVER_TOKEN``, else the token file (created once).

    The file is written atomically, mode 0600 from creation, in the 0700 ``~/.ironhive``; two servers starting at
    once agree on one token (the file is linked into place only when absent, else the existing one is read).

    Raises:
        ConfigurationError: A configured token is too short or not printable, or the file cannot be read or written.
    """
    if (chosen := chosen_token(configured, environ)) is not None:
        return chosen
    directory = user_directory(home)
    path = directory / TOKEN_FILE
    try:
        make_private_directory(directory)
        existing = _read_token(path)
        if existing is not None:
            return ServerToken(existing, "file", path)
        token = secrets.token_urlsafe(32)
        temporary = directory / f".{TOKEN_FILE}.{secrets.token_hex(6)}.new"
        write_atomically(temporary, token + "\n", private=True)
        try:
            os.link(temporary, path)  # only when absent: a server starting at the same moment keeps its token
        except FileExistsError:
            existing = _read_token(path)
            if existing is None:
                raise ConfigurationError(f"The server token file {path} is empty or unreadable") from None
            return ServerToken(existing, "file", path)
        finally:
            with contextlib.suppress(OSError):
                temporary.unlink()
    except OSError as error:
        raise ConfigurationError(f"Cannot keep the server token in {path}: {error.strerror or error}") from None
    return ServerToken(token, "generated", path)


def _read_token(path: Path) -> str | None:
    """The token kept in ``path`` (its mode repaired to 0600), or None when there is no usable one."""
    try:
        with path.open(encoding="ascii") as stream:
            value = stream.read(512).strip()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        value = ""
    restrict_file(path)
    if not value or token_problem(value, "token") is not None:
        path.unlink()  # damaged: replaced by a fresh one
        return None
    return value
