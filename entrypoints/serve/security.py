"""The guards of ``ironhive serve``: bearer token, Host (DNS rebinding) and Origin checks, CORS, body size limit."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import math
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import TYPE_CHECKING

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.typedefs import Middleware

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
"""The names a loopback server answers to (with its port) besides the address it is bound to."""

UNAUTHENTICATED_PATHS = frozenset({"/healthz"})
"""Routes answered without the token (they reveal nothing but liveness and queue depth)."""

CORS_METHODS = "GET, POST, DELETE, OPTIONS"
CORS_HEADERS = "Authorization, Content-Type, Last-Event-ID"


def is_loopback(host: str) -> bool:
    """Whether a bind address or host name stays on this machine (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """Whether a bind address listens on every interface (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_unspecified
    except ValueError:
        return False


def _host_form(host: str) -> str:
    """A host as it appears in a ``Host`` header (an IPv6 address in brackets), lower case."""
    name = host.strip().strip("[]").lower()
    return f"[{name}]" if ":" in name else name


def allowed_hosts(bound_host: str, port: int) -> frozenset[str] | None:
    """The ``Host`` header values the server answers: the bound name and, on loopback, the loopback names, each with
    the port; ``None`` (any) for a wildcard bind, which only ``--allow-remote`` with a configured token permits."""
    if is_wildcard(bound_host):
        return None
    names = {_host_form(bound_host)}
    if is_loopback(bound_host):
        names.update(LOOPBACK_NAMES)
    return frozenset(f"{name}:{port}" for name in names)


def host_allowed(header: str | None, allowed: Collection[str] | None) -> bool:
    """Whether a request's ``Host`` header names this server (the DNS-rebinding guard).

    A page served from ``attacker.example`` that rebinds its name to 127.0.0.1 still sends ``Host:
    attacker.example:<port>``, which is refused. Names compare case-insensitively; the port must be written.
    """
    if allowed is None:
        return True
    if header is None:
        return False
    return header.strip().lower() in allowed


def origin_allowed(origin: str, allowed: Iterable[str]) -> bool:
    """Whether a request's ``Origin`` is exactly one of ``server.allowedOrigins`` (``null`` never is)."""
    return origin != "null" and origin in frozenset(allowed)


def bearer_matches(header: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <token>`` (compared in constant time)."""
    if header is None:
        return False
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode("utf-8", "replace"), token.encode("utf-8"))


Handler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]


def middlewares(
    *, token: str, hosts: frozenset[str] | None, origins: Collection[str], max_request_bytes: int
) -> list[Middleware]:
    """The middlewares of the API, outermost first: JSON errors, Host, Origin and CORS, size limit, token."""
    from aiohttp import web

    too_large = f"Request body too large (the limit is {max_request_bytes} bytes)"

    @web.middleware
    async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except web.HTTPException as error:  # aiohttp's own (404 route, 405, 413 while reading): the API's shape
            if error.status < 400:
                raise
            message = too_large if error.status == 413 else error.reason
            response = error_response(error.status, message)
            if error.status == 405 and "Allow" in error.headers:
                response.headers["Allow"] = error.headers["Allow"]
            return response
        except Exception:  # a bug must not take the server down, nor show its internals
            logger.exception("%s %s failed", request.method, request.path)
            return error_response(500, "Internal server error")

    @web.middleware
    async def host_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not host_allowed(request.headers.get("Host"), hosts):
            return error_response(421, "This server does not answer to that Host name")
        return await handler(request)

    @web.middleware
    async def origin_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        if origin is None:
            return await handler(request)
        if not origin_allowed(origin, origins):
            return error_response(403, "Origin not allowed (see server.allowedOrigins)")
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            response: web.StreamResponse = web.Response(status=204)
        else:
            try:
                response = await handler(request)
            except web.HTTPException as error:
                response = error_response(error.status, error.reason)
        response.headers.update(
            {
                "Access-Control-Allow-Origin": origin,
                "Access-Control-Allow-Methods": CORS_METHODS,
                "Access-Control-Allow-Headers": CORS_HEADERS,
                "Access-Control-Expose-Headers": "Retry-After",
                "Access-Control-Max-Age": "600",
                "Vary": "Origin",
            }
        )
        return response

    @web.middleware
    async def size_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        length = request.content_length
        if length is not None and length > max_request_bytes:
            return error_response(413, too_large)
        return await handler(request)

    @web.middleware
    async def token_guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path not in UNAUTHENTICATED_PATHS and not bearer_matches(
            request.headers.get("Authorization"), token
        ):
            response = error_response(401, "Missing or wrong bearer token")
            response.headers["WWW-Authenticate"] = 'Bearer realm="ironhive"'
            return response
        return await handler(request)

    return [json_errors, host_guard, origin_guard, size_guard, token_guard]


def error_response(status: int, message: str) -> web.Response:
    """An error answer: ``{"error": message}`` with ``status``."""
    from aiohttp import web

    return web.json_response({"error": message}, status=status)


def retry_after(seconds: float) -> str:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds))) if math.isfinite(seconds) else "60"
