"""Finds the newest release of ironhive on a PyPI-compatible package index (its JSON API).

The index is, in this order: the ``--index-url`` option; ``PIP_INDEX_URL`` when it is a PyPI-like "simple" URL (its
path ends in ``/simple``, as pypi.org's, TestPyPI's, devpi's and most proxies' do), since such servers also serve the
JSON API beside it; else ``https://pypi.org``. The JSON document read is ``<base>/pypi/ironhive/json``; the newest
release is its ``info.version``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from ironhive.adapters.diagnostics.probe import fetch_json, redact_url
from ironhive.domain.errors import IronHiveError

DEFAULT_INDEX = "https://pypi.org"
DISTRIBUTION = "ironhive"
TIMEOUT_SECONDS = 5.0
"""The whole check (name lookup included) gives up after this long, so an offline machine fails fast."""


class ReleaseCheckError(IronHiveError):
    """The newest release could not be found out (the message says why; it never holds index credentials)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PackageIndex:
    """A PyPI-compatible index.

    Attributes:
        base: Its root URL (``https://pypi.org``), without a trailing slash.
        explicit: Whether the user named it (``--index-url``): the upgrade then installs from it too.
    """

    base: str
    explicit: bool = False

    @property
    def json_url(self) -> str:
        """The JSON API document of ironhive."""
        return f"{self.base}/pypi/{DISTRIBUTION}/json"

    @property
    def simple_url(self) -> str:
        """The "simple" index installers read (``<base>/simple/``)."""
        return f"{self.base}/simple/"

    @property
    def shown(self) -> str:
        """The base URL without credentials."""
        return redact_url(self.base)


def resolve_index(option: str | None, environ: Mapping[str, str]) -> PackageIndex:
    """The index to ask: ``--index-url``, else a PyPI-like ``PIP_INDEX_URL``, else pypi.org.

    Args:
        option: The ``--index-url`` value: a base URL (``https://pypi.org``) or a simple URL (``.../simple``).
        environ: The environment (``PIP_INDEX_URL``).

    Returns:
        The index.

    Raises:
        ReleaseCheckError: ``option`` is not an http(s) URL.
    """
    if option is not None and option.strip():
        if urlsplit(option.strip()).scheme not in ("http", "https") or not urlsplit(option.strip()).netloc:
            raise ReleaseCheckError(f"--index-url must be an http(s) URL, not '{redact_url(option.strip())}'")
        return PackageIndex(base=_base(option.strip()), explicit=True)
    pip_index = environ.get("PIP_INDEX_URL", "").strip()
    parts = urlsplit(pip_index)
    if parts.scheme in ("http", "https") and parts.netloc and parts.path.rstrip("/").endswith("/simple"):
        return PackageIndex(base=_base(pip_index))
    return PackageIndex(base=DEFAULT_INDEX)


def latest_version(index: PackageIndex, *, timeout: float = TIMEOUT_SECONDS) -> str:
    """The newest release of ironhive on ``index``.

    Args:
        index: The package index.
        timeout: Seconds for the whole request.

    Returns:
        Its ``info.version``.

    Raises:
        ReleaseCheckError: The index could not be reached, answered an error, or gave no version.
    """
    result = fetch_json(index.json_url, headers={"User-Agent": f"{DISTRIBUTION}-update-check"}, timeout=timeout)
    if result.error is not None:
        if result.status == 404:
            raise ReleaseCheckError(f"{DISTRIBUTION} is not on the index {index.shown} ({result.url}: HTTP 404)")
        raise ReleaseCheckError(f"{result.url}: {result.error}")
    info = result.document.get("info") if isinstance(result.document, Mapping) else None
    version = info.get("version") if isinstance(info, Mapping) else None
    if not isinstance(version, str) or not version.strip():
        raise ReleaseCheckError(f"{result.url} answered without a version (no info.version)")
    return version.strip()


def _base(url: str) -> str:
    trimmed = url.rstrip("/")
    return trimmed.removesuffix("/simple").rstrip("/")
