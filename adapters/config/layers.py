"""Reading one configuration layer's file (a config.yaml or the project's ``.env``) and judging what its problems mean.

A file that cannot be used is an error when it is the user's own or a trusted project's (the run must stop rather
than fall back silently), and a warning when it is an untrusted project's: a repository must not be able to stop a
run. An untrusted ``.env`` expands ``${VAR}`` from its own lines only, never from the real environment, so it cannot
copy a credential into a value it may set (a model name).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ironhive.adapters.config.environment import parse_dotenv
from ironhive.adapters.config.files import parse_yaml_mapping
from ironhive.adapters.config.safe_files import decode_text, read_limited_bytes, yaml_key_lines
from ironhive.adapters.config.trust import ProjectTrust, sha256_of
from ironhive.domain.errors import ConfigurationError

Warn = Callable[[str], None]
Fail = Callable[[ConfigurationError], None]
KeyLines = Mapping[tuple[str, ...], int]


def read_yaml_layer(
    path: Path, trust: ProjectTrust | None, warn: Warn, fail: Fail
) -> tuple[dict[str, Any], str, Callable[[], KeyLines]] | None:
    """One config file's mapping, the SHA-256 of its bytes and a way to its keys' lines; ``None`` when it is absent or
    unusable.

    Args:
        path: The file.
        trust: How to judge a project's file (``None``: the user's own file, always trusted).
        warn: Receives the problem of an untrusted file that cannot be used (it cannot stop a run).
        fail: Receives the problem of the user's or a trusted file that cannot be used.
    """
    try:
        read = _read_text(path)
    except ConfigurationError as error:  # UnsafeFileError: a FIFO, a device, too large, not UTF-8
        _unusable(error, trust is None, warn, fail)  # nothing was read, so nothing of a project's can be trusted
        return None
    if read is None:
        return None
    data, text = read
    digest = sha256_of(data)
    try:
        mapping = parse_yaml_mapping(text, path)
    except ConfigurationError as error:  # YamlSyntaxError included: it names the file and line
        _unusable(error, trust is None or trust.is_trusted(path, digest), warn, fail)
        return None
    return mapping, digest, lambda: yaml_key_lines(text)


def read_dotenv_layer(
    path: Path, trust: ProjectTrust, environ: Mapping[str, str], warn: Warn
) -> tuple[dict[str, str], str, bool] | None:
    """The project's ``.env`` values, the SHA-256 of its bytes and whether that content is trusted; ``None`` when it
    is absent or cannot be read (a warning: ``.env`` problems never stop a run).

    Args:
        path: The ``.env`` file.
        trust: Judges the file's content.
        environ: The real environment, which ``${VAR}`` of a trusted file may refer to.
        warn: Receives each problem (an unreadable file, an unreadable statement at ``file:line``).
    """
    try:
        read = _read_text(path)
    except ConfigurationError as error:  # UnsafeFileError: a FIFO, a device, too large, not UTF-8
        warn(f"{error}; the file was ignored")
        return None
    if read is None:
        return None
    data, text = read
    digest = sha256_of(data)
    trusted = trust.is_trusted(path, digest)
    parsed = parse_dotenv(text, str(path), environ if trusted else None)
    for message in parsed.warnings:
        warn(message)
    return parsed.values, digest, trusted


def _read_text(path: Path) -> tuple[bytes, str] | None:
    """The file's bytes (what trust hashes) and its text; ``None`` when it does not exist.

    Raises:
        UnsafeFileError: It is not a regular file, too large, unreadable or not UTF-8.
    """
    data = read_limited_bytes(path)
    return None if data is None else (data, decode_text(path, data))


def _unusable(error: ConfigurationError, trusted: bool, warn: Warn, fail: Fail) -> None:
    if trusted:
        fail(error)
    else:
        warn(f"{error}; the file was ignored (it is not trusted, so it cannot stop a run)")
