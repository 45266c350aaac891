"""Whether this run may use the warm process, decided without importing YAML or pydantic.

Order: the ``--no-daemon`` flag, then ``IRONHIVE_DAEMON`` (``0``/``1``), then ``daemon.enabled`` of the user's
``~/.ironhive/config.yaml``, then the default: used, except where ``CI`` is set. The config file is not parsed here:
a file that does not mention ``daemon`` has the defaults; otherwise a small cache (``~/.ironhive/daemon-settings``,
keyed by the file's length and CRC) holds the section's values. When the file changed since the cache was written,
the run goes direct and :func:`refresh` rewrites the cache afterwards with the real parser.
"""

from __future__ import annotations

import os
import zlib

TYPE_CHECKING = False  # not typing's: the client must not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping

ENVIRONMENT_VARIABLE = "IRONHIVE_DAEMON"
NO_DAEMON_FLAG = "--no-daemon"
DEFAULT_IDLE_SECONDS = 300.0
CACHE_NAME = "daemon-settings"
_OFF = frozenset({"0", "false", "no", "off"})
_ON = frozenset({"1", "true", "yes", "on"})


class Decision:
    """What this run does about the warm process.

    Attributes:
        enabled: Whether the run may use (and start) the warm process.
        idle_seconds: How long the warm process waits for a run before it exits.
        reason: Why, in a few words (for ``ironhive daemon status``).
        refresh: The cached settings are out of date: rewrite them after the run.
    """

    __slots__ = ("enabled", "idle_seconds", "reason", "refresh")

    def __init__(self, *, enabled: bool, idle_seconds: float, reason: str, refresh: bool = False) -> None:
        self.enabled = enabled
        self.idle_seconds = idle_seconds
        self.reason = reason
        self.refresh = refresh


def config_path(home: str) -> str:
    """The user's configuration file."""
    return os.path.join(home, ".ironhive", "config.yaml")


def cache_path(home: str) -> str:
    """The file caching the ``daemon`` section of the user's configuration."""
    return os.path.join(home, ".ironhive", CACHE_NAME)


def content_key(content: bytes) -> str:
    """The cache key of a configuration file's bytes."""
    return f"{len(content)}:{zlib.crc32(content)}"


def in_ci(environ: Mapping[str, str]) -> bool:
    """Whether ``CI`` is set (to anything but empty, ``0`` or ``false``)."""
    return environ.get("CI", "").strip().lower() not in ("", "0", "false")


def decide(environ: Mapping[str, str], home: str, *, no_daemon_flag: bool = False) -> Decision:
    """Decide cheaply whether this run may use the warm process.

    Args:
        environ: The process environment.
        home: The user's home directory.
        no_daemon_flag: ``--no-daemon`` was given.

    Returns:
        The decision.
    """
    configured, idle, refresh = _configured(home)
    if no_daemon_flag:
        return Decision(enabled=False, idle_seconds=idle, reason=f"{NO_DAEMON_FLAG} given")
    variable = environ.get(ENVIRONMENT_VARIABLE, "").strip().lower()
    if variable in _OFF:
        return Decision(enabled=False, idle_seconds=idle, reason=f"{ENVIRONMENT_VARIABLE}={variable}", refresh=refresh)
    if variable in _ON:
        return Decision(enabled=True, idle_seconds=idle, reason=f"{ENVIRONMENT_VARIABLE}={variable}", refresh=refresh)
    if refresh:  # the file changed: its daemon section is unknown until the direct run re-reads it
        return Decision(enabled=False, idle_seconds=idle, reason="configuration changed", refresh=True)
    if configured is not None:
        return Decision(enabled=configured, idle_seconds=idle, reason=f"daemon.enabled: {str(configured).lower()}")
    if in_ci(environ):
        return Decision(enabled=False, idle_seconds=idle, reason="CI is set")
    return Decision(enabled=True, idle_seconds=idle, reason="default")


def _configured(home: str) -> tuple[bool | None, float, bool]:
    """``daemon.enabled``, ``daemon.idleSeconds`` and whether the cache must be refreshed."""
    try:
        with open(config_path(home), "rb") as stream:
            content = stream.read(1 << 20)
    except OSError:
        return None, DEFAULT_IDLE_SECONDS, False
    if b"daemon" not in content:
        return None, DEFAULT_IDLE_SECONDS, False
    cached = read_cache(home)
    if cached is None or cached[0] != content_key(content):
        return None, DEFAULT_IDLE_SECONDS, True
    return cached[1], cached[2], False


def read_cache(home: str) -> tuple[str, bool | None, float] | None:
    """The cache's key, ``enabled`` and ``idleSeconds``, or ``None`` when it is missing or unreadable."""
    try:
        with open(cache_path(home), encoding="ascii") as stream:
            key, enabled, idle = stream.read(200).split("\n")[:3]
        return key, {"true": True, "false": False}.get(enabled), float(idle)
    except (OSError, ValueError):
        return None


def refresh(home: str) -> tuple[bool | None, float]:
    """Read the ``daemon`` section of the user's configuration with the real parser and cache it.

    A section that does not validate counts as ``enabled: false`` (the run reports the error itself).

    Args:
        home: The user's home directory.

    Returns:
        ``daemon.enabled`` and ``daemon.idleSeconds``.
    """
    from contextlib import suppress
    from pathlib import Path

    from pydantic import ValidationError

    from ironhive.adapters.atomic_files import write_atomically
    from ironhive.adapters.config.files import parse_yaml_mapping
    from ironhive.adapters.config.safe_files import decode_text, read_limited_bytes
    from ironhive.adapters.config.schema import DaemonSection
    from ironhive.domain.errors import ConfigurationError

    path = Path(config_path(home))
    enabled: bool | None
    try:
        content = read_limited_bytes(path)
    except ConfigurationError:
        return False, DEFAULT_IDLE_SECONDS
    if content is None:
        return None, DEFAULT_IDLE_SECONDS
    try:
        section = parse_yaml_mapping(decode_text(path, content), path).get("daemon") or {}
        settings = DaemonSection.model_validate(section)
        enabled, idle = settings.enabled, float(settings.idle_seconds)
    except (ConfigurationError, ValidationError, AttributeError, TypeError):
        enabled, idle = False, DEFAULT_IDLE_SECONDS
    text = f"{content_key(content)}\n{'' if enabled is None else str(enabled).lower()}\n{idle}\n"
    with suppress(OSError):  # a cache: the next run reads the configuration again
        write_atomically(Path(cache_path(home)), text, private=True, durable=False)
    return enabled, idle
