"""Compares release version numbers as PEP 440 orders them, through ``packaging`` (local labels ignored)."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version


def parse_version(text: str) -> Version:
    """Read a PEP 440 version number (``1.2.3``, ``2.0rc1``, ``1.0.post2.dev3``, ``v1.4``, ``1.0+local``).

    The local label (``+local``) does not take part in comparisons: ``1.0+local.7`` is ``1.0``.

    Raises:
        ValueError: ``text`` is not a PEP 440 version.
    """
    try:
        version = Version(text.strip())
    except InvalidVersion:
        raise ValueError(f"'{text}' is not a version number") from None
    return Version(version.public)


def is_newer(candidate: str, installed: str) -> bool:
    """Whether version ``candidate`` comes after ``installed``.

    Raises:
        ValueError: Either is not a PEP 440 version.
    """
    return parse_version(candidate) > parse_version(installed)
