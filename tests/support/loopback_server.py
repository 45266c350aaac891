"""LoopbackHttpServer: the serving machinery the scripted 127.0.0.1 provider servers of the tests share."""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, Self, TypeAlias, TypeVar

from aiohttp import web

Json: TypeAlias = dict[str, Any]

ReplyT = TypeVar("ReplyT")
RecordT = TypeVar("RecordT")


@dataclass(frozen=True, kw_only=True)
class ErrorReply:
    """An HTTP error with a JSON body shaped as the provider shapes it."""

    status: int
    body: Json
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """One tool call; ``arguments`` as a mapping is sent as JSON, as a string is sent verbatim (even if malformed)."""

    call_id: str | None
    name: str
    arguments: Mapping[str, Any] | str

    @property
    def arguments_text(self) -> str:
        """The arguments as the wire carries them."""
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


def pieces(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of ``size`` characters (the last one shorter), as streamed arguments arrive."""
    return [text[start : start + size] for start in range(0, len(text), max(1, size))]


async def start_site(
    app: web.Application, port: int = 0, *, shutdown_timeout: float = 60.0
) -> tuple[web.AppRunner, int]:
    """Serve ``app`` on 127.0.0.1 in the running loop.

    Args:
        app: The application.
        port: The port to listen on; 0 picks a free one.
        shutdown_timeout: How long ``runner.cleanup()`` waits for open requests.

    Returns:
        The runner (call ``cleanup()`` on it to stop) and the port bound.
    """
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner, int(runner.addresses[0][1])


class LoopbackHttpServer(Generic[ReplyT, RecordT]):
    """An aiohttp server on 127.0.0.1 in a background thread with its own loop, answering from a queue of replies.

    Subclasses give the wire format: ``_add_routes`` registers the handlers, which call ``_take`` to record a request
    and pop the next scripted entry, then ``_resolve`` to turn it into a reply.

    Args:
        port: The port to listen on; 0 picks a free one.
        models: The model ids the server lists.
        api_key: When set, the key requests must carry (each subclass checks it as its provider does).
    """

    _label = "HTTP"
    """The provider's name in thread names and failure messages."""
    _path = ""
    """What ``base_url`` appends to ``http://127.0.0.1:<port>``."""

    def __init__(self, *, port: int = 0, models: Sequence[str] = (), api_key: str | None = None) -> None:
        self._port = port
        self._models = tuple(models)
        self._api_key = api_key
        self._lock = threading.Lock()
        self._replies: collections.deque[ReplyT | ErrorReply | Callable[[Json], ReplyT | str]] = collections.deque()
        self._requests: list[RecordT] = []
        self._headers: list[dict[str, str]] = []
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._counter = 0

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> Self:
        """Start serving; returns once the port is bound."""
        self._thread = threading.Thread(target=self._run, name=f"loopback-{self._label.lower()}", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=15):
            raise RuntimeError(f"the loopback {self._label} server did not start in time")
        if self._failure is not None:
            raise RuntimeError(f"the loopback {self._label} server failed to start") from self._failure
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread to end."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._stop.set)
        thread.join(timeout=15)

    @property
    def base_url(self) -> str:
        """The URL the provider's SDK takes as its base."""
        return f"http://127.0.0.1:{self._port}{self._path}"

    @property
    def requests(self) -> list[RecordT]:
        """The requests that took (or would have taken) a scripted reply, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers of those requests, in order (names lower-cased)."""
        with self._lock:
            return list(self._headers)

    @property
    def pending_replies(self) -> int:
        """How many scripted replies have not been used yet."""
        with self._lock:
            return len(self._replies)

    # -- script ----------------------------------------------------------------------------------------------------

    def enqueue(self, reply: ReplyT | ErrorReply | Callable[[Json], ReplyT | str]) -> Self:
        """Queue one reply (or a function of the request body returning one, or a text)."""
        with self._lock:
            self._replies.append(reply)
        return self

    def enqueue_function(self, function: Callable[[Json], ReplyT | str]) -> Self:
        """Queue a function that receives the request body and returns a reply or a text."""
        return self.enqueue(function)

    def enqueue_error(self, status: int, body: Json, headers: Mapping[str, str] | None = None) -> Self:
        """Queue an HTTP error with a JSON body."""
        return self.enqueue(ErrorReply(status=status, body=body, headers=dict(headers or {})))

    # -- for subclasses --------------------------------------------------------------------------------------------

    def _add_routes(self, app: web.Application) -> None:
        raise NotImplementedError

    def _internal_error_body(self, message: str) -> Json:
        """The body of the provider's 500 carrying ``message``."""
        raise NotImplementedError

    def _text_reply(self, text: str) -> ReplyT:
        """The reply a reply function's plain text stands for."""
        raise NotImplementedError

    def _take(
        self, record: RecordT, headers: Mapping[str, str], *, consume: bool = True
    ) -> tuple[int, ReplyT | ErrorReply | Callable[[Json], ReplyT | str] | None]:
        """Record a request and pop the next scripted entry (``None`` when the queue is empty or not ``consume``).

        Returns:
            The request's number (from 1) and the entry, to hand to ``_resolve``.
        """
        with self._lock:
            self._requests.append(record)
            self._headers.append({name.lower(): value for name, value in headers.items()})
            self._counter += 1
            scripted = self._replies.popleft() if self._replies and consume else None
            return self._counter, scripted

    def _resolve(
        self, scripted: ReplyT | ErrorReply | Callable[[Json], ReplyT | str] | None, body: Json, number: int
    ) -> ReplyT | ErrorReply:
        """The reply a scripted entry stands for; an empty script or a failing reply function answers 500."""
        name = type(self).__name__
        if scripted is None:
            message = f"{name}: the script ran out of replies at request #{number}"
            return ErrorReply(status=500, body=self._internal_error_body(message))
        if not callable(scripted):
            return scripted
        try:
            produced = scripted(body)
        except Exception as exc:  # the test sees the failure as the provider's 500
            message = f"{name}: the reply function failed: {exc!r}"
            return ErrorReply(status=500, body=self._internal_error_body(message))
        return self._text_reply(produced) if isinstance(produced, str) else produced

    # -- serving ---------------------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported to start(); the thread must not die silently
            self._failure = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        app = web.Application()
        self._add_routes(app)
        runner, self._port = await start_site(app, self._port, shutdown_timeout=2.0)
        try:
            self._ready.set()
            await self._stop.wait()
        finally:
            await runner.cleanup()


def serve_script(
    make_server: Callable[[int], LoopbackHttpServer[ReplyT, Any]],
    read_reply: Callable[[Json], ReplyT | ErrorReply],
    argv: Sequence[str] | None,
    description: str | None,
) -> int:
    """Serve the replies of a ``--script`` file until SIGTERM/SIGINT; the base URL is the first line on stdout.

    Args:
        make_server: Makes the server for a port.
        read_reply: Reads one reply of the file's list.
        argv: The command line (``None``: ``sys.argv``).
        description: The command's help text.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--script", type=Path, required=True, help="JSON file holding a list of replies")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    replies = [read_reply(item) for item in json.loads(args.script.read_text(encoding="utf-8"))]
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with make_server(args.port) as server:
        for reply in replies:
            server.enqueue(reply)
        print(server.base_url, flush=True)
        while not done.wait(0.5):
            pass
    return 0


__all__ = ["ErrorReply", "Json", "LoopbackHttpServer", "ScriptedCall", "pieces", "serve_script", "start_site"]
