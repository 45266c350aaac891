"""GETs of small JSON documents with a hard overall deadline, for the connectivity check and the update check.

Each request runs in a daemon thread and the caller waits at most the deadline: urllib's ``timeout`` bounds each socket
operation but not the DNS lookup, and a daemon thread still resolving a name cannot keep the process alive. Proxies
from the environment (``HTTPS_PROXY``, ``NO_PROXY``) apply, as they do for the provider SDKs.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

MAX_BYTES = 16 * 1024 * 1024
"""The most a JSON answer may hold (model listings and release documents are far smaller)."""

_ERROR_DETAIL = 200
_CREDENTIALS = re.compile(r"://[^/\s@]+@")


@dataclass(frozen=True, kw_only=True, slots=True)
class FetchResult:
    """What one GET returned.

    Attributes:
        url: The URL asked (credentials redacted).
        document: The parsed JSON answer when the request succeeded.
        error: Why it failed, or ``None``.
        status: The HTTP status when there was an answer.
    """

    url: str
    document: object = None
    error: str | None = None
    status: int | None = None

    @property
    def ok(self) -> bool:
        """Whether a JSON document arrived with a 2xx status."""
        return self.error is None


@dataclass(frozen=True, kw_only=True, slots=True)
class JsonRequest:
    """A GET to make.

    Attributes:
        url: An ``http`` or ``https`` URL.
        headers: Request headers (API keys go here, never into the URL).
    """

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)


def redact_url(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@``, so that it can be shown."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def redact_credentials(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it replaced by ``***@``."""
    return _CREDENTIALS.sub("://***@", text)


def fetch_json(url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 5.0) -> FetchResult:
    """GET ``url`` and parse its JSON answer, giving up after ``timeout`` seconds in all.

    Args:
        url: An ``http`` or ``https`` URL.
        headers: Request headers.
        timeout: Seconds for the whole request: name lookup, connection, answer.

    Returns:
        The result; failures are reported in it, never raised.
    """
    return fetch_all([JsonRequest(url=url, headers=dict(headers or {}))], timeout=timeout)[0]


def fetch_all(requests: Sequence[JsonRequest], *, timeout: float = 5.0) -> list[FetchResult]:
    """Make every request at once and wait at most ``timeout`` seconds for all of them.

    Args:
        requests: The GETs.
        timeout: Seconds for all of them together (they run concurrently).

    Returns:
        One result per request, in order.
    """
    deadline = time.monotonic() + timeout
    pending = [_Pending(request, timeout) for request in requests]
    return [item.wait(deadline) for item in pending]


class _Pending:
    def __init__(self, request: JsonRequest, timeout: float) -> None:
        self._request = request
        self._timeout = timeout
        self._result: FetchResult | None = None
        self._thread = threading.Thread(target=self._run, name="ironhive-probe", daemon=True)
        self._thread.start()

    def wait(self, deadline: float) -> FetchResult:
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._result is None:
            return FetchResult(url=redact_url(self._request.url), error=f"no answer within {self._timeout:g} s")
        return self._result

    def _run(self) -> None:
        self._result = _get(self._request, self._timeout)


def _get(request: JsonRequest, timeout: float) -> FetchResult:
    shown = redact_url(request.url)
    if urlsplit(request.url).scheme not in ("http", "https"):
        return FetchResult(url=shown, error="only http and https URLs are supported")
    outgoing = urllib.request.Request(request.url, headers={"Accept": "application/json", **request.headers})
    try:
        with urllib.request.urlopen(outgoing, timeout=timeout) as response:
            status = int(response.status)
            body = response.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as error:
        with error:
            detail = _error_detail(error.read(64 * 1024))
        reason = f"HTTP {error.code}" + (f" {error.reason}" if error.reason else "")
        return FetchResult(url=shown, error=f"{reason}: {detail}" if detail else reason, status=error.code)
    except urllib.error.URLError as error:
        return FetchResult(url=shown, error=_reason(error.reason))
    except (OSError, http.client.HTTPException, ValueError) as error:
        return FetchResult(url=shown, error=_reason(error))
    if len(body) > MAX_BYTES:
        return FetchResult(url=shown, error="the answer is too large", status=status)
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return FetchResult(url=shown, error="the answer is not JSON", status=status)
    return FetchResult(url=shown, document=document, status=status)


def _reason(reason: object) -> str:
    if isinstance(reason, TimeoutError):
        return "timed out"
    text = str(reason).strip()
    return text or type(reason).__name__


def _error_detail(body: bytes) -> str:
    """The message of a JSON error body (OpenAI, Anthropic and Google shapes), or its first text."""
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        text = body.decode("utf-8", "replace")
        return _shorten(text) if text.strip() and "<" not in text[:1] else ""
    message: object = None
    if isinstance(document, Mapping):
        error = document.get("error")
        if isinstance(error, Mapping):
            message = error.get("message")
        elif isinstance(error, str):
            message = error
        message = message or document.get("message") or document.get("detail")
    return _shorten(str(message)) if message else ""


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _ERROR_DETAIL else flat[: _ERROR_DETAIL - 1] + "…"
