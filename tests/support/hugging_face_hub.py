"""A loopback stand-in for the Hugging Face Hub's file-resolve protocol, enough for huggingface_hub's hf_hub_download.

``HEAD``/``GET /{owner}/{name}/resolve/{revision}/{file}`` answer with the headers huggingface_hub reads: ``ETag``,
``X-Repo-Commit``, ``Content-Length``; ``GET`` honours ``Range: bytes=N-`` with ``206`` and ``Content-Range``. Errors
carry the Hub's ``X-Error-Code``. A file can be moved to a second "CDN" address (``302`` with ``X-Linked-Etag`` and
``X-Linked-Size``, as the Hub does for LFS files), and a GET can be told to hang up part way. Plain asyncio, one
request per connection, so every request and its headers are recorded exactly.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_REASONS = {200: "OK", 206: "Partial Content", 302: "Found", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}


@dataclass(frozen=True)
class Seen:
    """One request the hub received."""

    method: str
    path: str
    headers: dict[str, str]
    host: str


@dataclass
class Hub:
    """The hub's files and behaviour; ``endpoint`` is what HF_ENDPOINT should be."""

    endpoint: str = ""
    cdn: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    moved: set[str] = field(default_factory=set)
    status: dict[str, tuple[int, str]] = field(default_factory=dict)
    hang_ups: list[int] = field(default_factory=list)
    """Bytes to send before hanging up, for the next GETs of a file body, one entry used per GET."""
    requests: list[Seen] = field(default_factory=list)

    def add(self, repo: str, file: str, body: bytes, *, moved: bool = False) -> None:
        """Serve ``body`` as ``file`` of ``repo`` (from the CDN address when ``moved``)."""
        self.files[f"/{repo}/resolve/main/{file}"] = body
        if moved:
            self.moved.add(f"/{repo}/resolve/main/{file}")

    def fail(self, repo: str, file: str, status: int, error_code: str = "") -> None:
        """Answer requests for ``file`` with ``status`` and the Hub's ``X-Error-Code``."""
        self.status[f"/{repo}/resolve/main/{file}"] = (status, error_code)

    def seen(self, method: str | None = None) -> list[Seen]:
        return [item for item in self.requests if method is None or item.method == method]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        request_line, *lines = head.strip("\r\n").split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        headers = {name.strip().lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}
        host = writer.get_extra_info("sockname")[0]
        self.requests.append(Seen(method=method, path=path, headers=headers, host=host))
        try:
            await self._answer(writer, method, path, headers, on_cdn=host != "127.0.0.1")
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _answer(
        self, writer: asyncio.StreamWriter, method: str, path: str, headers: dict[str, str], *, on_cdn: bool
    ) -> None:
        key = path.removeprefix("/cdn") if on_cdn else path
        if key in self.status:
            status, code = self.status[key]
            extra = {"X-Error-Code": code} if code else {}
            await _respond(writer, status, {**extra, "X-Repo-Commit": COMMIT}, b"error", method)
            return
        body = self.files.get(key)
        if body is None:
            await _respond(writer, 404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT}, b"", method)
            return
        etag = f'"{hashlib.sha256(body).hexdigest()}"'
        if key in self.moved and not on_cdn:
            linked = {"X-Linked-Etag": etag, "X-Linked-Size": str(len(body)), "X-Repo-Commit": COMMIT}
            await _respond(writer, 302, {**linked, "Location": f"{self.cdn}/cdn{key}"}, b"", method)
            return
        common = {"ETag": etag, "X-Repo-Commit": COMMIT, "Accept-Ranges": "bytes"}
        if method == "GET" and self.hang_ups:
            cut = self.hang_ups.pop(0)
            writer.write(_status_and_headers(200, {**common, "Content-Length": str(len(body))}) + body[:cut])
            await writer.drain()
            writer.transport.abort()
            return
        start = _range_start(headers.get("range"))
        if method == "GET" and start:
            part = body[start:]
            ranged = {**common, "Content-Range": f"bytes {start}-{len(body) - 1}/{len(body)}"}
            await _respond(writer, 206, ranged, part, method)
            return
        await _respond(writer, 200, common, body, method)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Hub]:
        hub_server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        cdn_server = await asyncio.start_server(self._serve, "127.0.0.2", 0)
        self.endpoint = f"http://127.0.0.1:{hub_server.sockets[0].getsockname()[1]}"
        self.cdn = f"http://127.0.0.2:{cdn_server.sockets[0].getsockname()[1]}"
        try:
            yield self
        finally:
            for server in (hub_server, cdn_server):
                server.close()
                await server.wait_closed()


def _range_start(value: str | None) -> int:
    if not value or not value.startswith("bytes=") or not value.endswith("-"):
        return 0
    return int(value.removeprefix("bytes=").removesuffix("-"))


def _status_and_headers(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS[status]}", *(f"{k}: {v}" for k, v in headers.items()), "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _respond(
    writer: asyncio.StreamWriter, status: int, headers: dict[str, str], body: bytes, method: str
) -> None:
    writer.write(_status_and_headers(status, {**headers, "Content-Length": str(len(body))}))
    if method != "HEAD":
        writer.write(body)
    await writer.drain()
