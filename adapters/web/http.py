"""WebClient: the web tools' HTTP access over aiohttp (http/https only, timeouts, size caps, errors as ToolError).

Security note: the web tools fetch URLs the model names. This client refuses every scheme but ``http`` and
``https``, caps sizes and time, and never puts a request's query string (where an API key may travel) into an error
message. It does not refuse loopback or private addresses (SSRF): which hosts a session may reach is a policy
decision for the permission rules (``tools`` entries for ``web_search``/``explore_site``/``deep_research``), and the
tests need loopback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ironhive.domain.errors import ToolArgumentError, ToolError
from ironhive.ports.chat import JsonValue

if TYPE_CHECKING:
    import aiohttp

DEFAULT_USER_AGENT = "Mozilla/5.0 (compatible; ironhive/0.1; +https://github.com/iyulab/ironhive-host)"
DEFAULT_TIMEOUT_SECONDS = 20.0
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
_CHUNK = 64 * 1024


@dataclass(frozen=True, kw_only=True, slots=True)
class FetchedResource:
    """A response read (up to the size cap).

    Attributes:
        url: The final URL, after redirects.
        status: The HTTP status.
        content_type: The media type without parameters, lower case (``""`` when absent).
        charset: The charset the server named, if any.
        body: The bytes read.
        truncated: The body was longer than the cap and was cut.
    """

    url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """A 2xx status."""
        return 200 <= self.status < 300

    def text(self) -> str:
        """The body decoded with the server's charset (UTF-8 otherwise); undecodable bytes are replaced."""
        try:
            return self.body.decode(self.charset or "utf-8", errors="replace")
        except LookupError:  # a charset name Python does not know
            return self.body.decode("utf-8", errors="replace")


def require_http_url(url: str, *, parameter: str | None = None, tool: str = "web") -> str:
    """Return ``url`` stripped when it is an absolute http(s) URL with a host.

    Raises:
        ToolArgumentError: ``parameter`` is given (a model-supplied argument) and the URL is not acceptable.
        ToolError: Otherwise (a URL found in a page, robots.txt or a sitemap).
    """
    candidate = url.strip()
    parts = urlsplit(candidate)
    problem: str | None = None
    if parts.scheme.lower() not in ("http", "https"):
        shown = f"'{parts.scheme}'" if parts.scheme else "no scheme"
        problem = f"only http and https URLs can be fetched; '{_short(candidate)}' has {shown}"
    elif not parts.hostname:
        problem = f"'{_short(candidate)}' has no host"
    if problem is None:
        return candidate
    if parameter is not None:
        raise ToolArgumentError(f"Parameter '{parameter}' of tool '{tool}': {problem}.", parameter=parameter)
    raise ToolError(f"Refused to fetch: {problem}.")


class WebClient:
    """Fetches web resources for the tools.

    Without a ``session`` every request opens and closes its own aiohttp session, so the client needs no lifecycle;
    with one (owned and closed by the entrypoint) connections are pooled. ``async with WebClient() as web:`` opens a
    pooled session for the block.

    Args:
        session: An aiohttp session to use (not closed by this client).
        timeout_seconds: Total time allowed per request.
        max_bytes: Default size cap of a response body; longer bodies are cut (``truncated``).
        user_agent: The ``User-Agent`` header sent.
    """

    def __init__(
        self,
        *,
        session: aiohttp.ClientSession | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        user_agent: str = DEFAULT_USER_AGENT,
    ) -> None:
        self._session = session
        self._owned: aiohttp.ClientSession | None = None
        self._timeout_seconds = timeout_seconds
        self._max_bytes = max_bytes
        self._headers = {"User-Agent": user_agent}

    @property
    def _timeout(self) -> aiohttp.ClientTimeout:
        import aiohttp  # on first use: building the web tools imports no HTTP stack

        return aiohttp.ClientTimeout(total=self._timeout_seconds)

    async def __aenter__(self) -> WebClient:
        if self._session is None:
            import aiohttp

            self._owned = aiohttp.ClientSession(timeout=self._timeout)
            self._session = self._owned
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._owned is not None:
            await self._owned.close()
            self._session = self._owned = None

    async def get(
        self,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        max_bytes: int | None = None,
        label: str | None = None,
    ) -> FetchedResource:
        """GET a URL; any status is returned (the caller decides what a 404 means).

        Args:
            url: An http(s) URL.
            params: Query parameters to add.
            headers: Extra headers.
            max_bytes: This request's size cap (the client's default otherwise).
            label: How errors name the request (the URL without its query otherwise).

        Raises:
            ToolError: The URL is not http(s), or the request failed or timed out.
        """
        return await self._request(
            "GET", url, params=params, headers=headers, json=None, max_bytes=max_bytes, label=label
        )

    async def post_json(
        self,
        url: str,
        payload: Mapping[str, JsonValue],
        *,
        headers: Mapping[str, str] | None = None,
        label: str | None = None,
    ) -> FetchedResource:
        """POST a JSON body; any status is returned.

        Raises:
            ToolError: The URL is not http(s), or the request failed or timed out.
        """
        return await self._request("POST", url, params=None, headers=headers, json=payload, max_bytes=None, label=label)

    async def _request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        json: Mapping[str, JsonValue] | None,
        max_bytes: int | None,
        label: str | None,
    ) -> FetchedResource:
        target = require_http_url(url)
        name = label or _without_query(target)
        merged = {**self._headers, **(headers or {})}
        cap = max_bytes if max_bytes is not None else self._max_bytes
        import aiohttp

        try:
            if self._session is not None:
                return await self._send(self._session, method, target, params, merged, json, cap)
            async with aiohttp.ClientSession(timeout=self._timeout) as session:
                return await self._send(session, method, target, params, merged, json, cap)
        except TimeoutError as exc:  # aiohttp's timeouts (asyncio.TimeoutError is TimeoutError since 3.11)
            raise ToolError(f"{name}: no answer within {self._timeout_seconds:g} seconds.") from exc
        except aiohttp.ClientError as exc:
            raise ToolError(f"{name}: {_describe(exc)}.") from exc

    async def _send(
        self,
        session: aiohttp.ClientSession,
        method: str,
        url: str,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str],
        json: Mapping[str, JsonValue] | None,
        cap: int,
    ) -> FetchedResource:
        async with session.request(
            method, url, params=params, headers=headers, json=json, timeout=self._timeout
        ) as response:
            chunks: list[bytes] = []
            size = 0
            truncated = False
            async for chunk in response.content.iter_chunked(_CHUNK):
                chunks.append(chunk)
                size += len(chunk)
                if size > cap:
                    truncated = True
                    break
            body = b"".join(chunks)[:cap]
            return FetchedResource(
                url=str(response.url),
                status=response.status,
                content_type=(response.content_type or "").lower(),
                charset=response.charset,
                body=body,
                truncated=truncated,
            )


def _describe(exc: aiohttp.ClientError) -> str:
    """Why a request failed, without echoing its URL (the query may carry an API key)."""
    import aiohttp

    match exc:
        case aiohttp.ClientConnectorError():
            return f"cannot connect to {exc.host}:{exc.port} ({exc.os_error.strerror or type(exc.os_error).__name__})"
        case aiohttp.TooManyRedirects():
            return "too many redirects"
        case aiohttp.ClientPayloadError():
            return "the response was cut off or malformed"
        case aiohttp.ServerDisconnectedError():
            return "the server closed the connection"
        case aiohttp.InvalidURL():
            return "the URL is not valid"
        case _:
            return f"the request failed ({type(exc).__name__})"


def _without_query(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
