"""LoopbackOpenAIServer: a scripted 127.0.0.1 server speaking OpenAI chat completions (JSON and SSE) for tests."""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

from aiohttp import web

Json: TypeAlias = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class TextReply:
    """An answer in text, optionally preceded by reasoning sent as ``reasoning_content`` deltas."""

    text: str
    chunks: Sequence[str] | None = None
    usage: tuple[int, int] | None = None
    reasoning: Sequence[str] = ()
    finish_reason: str = "stop"
    chunk_delay: float = 0.0


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


@dataclass(frozen=True, kw_only=True)
class ToolCallsReply:
    """Tool calls, their arguments split over several deltas of ``argument_piece`` characters as the real API does."""

    calls: Sequence[ScriptedCall]
    usage: tuple[int, int] | None = None
    text: str = ""
    argument_piece: int = 5


@dataclass(frozen=True, kw_only=True)
class ErrorReply:
    """An HTTP error with an OpenAI-shaped JSON body."""

    status: int
    body: Json
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class StreamErrorReply:
    """A stream that sends some text, then an ``{"error": ...}`` event, as OpenAI does when it fails mid-stream."""

    error: Json
    before: Sequence[str] = ()


Reply: TypeAlias = TextReply | ToolCallsReply | ErrorReply | StreamErrorReply
ReplyFunction: TypeAlias = Callable[[Json], "Reply | str"]


def error_body(message: str, error_type: str, *, param: str | None = None, code: str | None = None) -> Json:
    """An error body exactly as OpenAI shapes it."""
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def _usage(usage: tuple[int, int]) -> Json:
    prompt, completion = usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), max(1, size))]


def stream_deltas(reply: TextReply | ToolCallsReply | StreamErrorReply) -> list[tuple[Json, str | None]]:
    """The ``(delta, finish_reason)`` pairs of a streamed reply, in the order the real API sends them."""
    deltas: list[tuple[Json, str | None]] = []
    if isinstance(reply, StreamErrorReply):
        deltas.append(({"role": "assistant", "content": "", "refusal": None}, None))
        return deltas + [({"content": piece}, None) for piece in reply.before]
    if isinstance(reply, TextReply):
        if reply.reasoning:
            deltas.append(({"role": "assistant", "content": None, "reasoning_content": ""}, None))
            deltas += [({"content": None, "reasoning_content": piece}, None) for piece in reply.reasoning]
        else:
            deltas.append(({"role": "assistant", "content": "", "refusal": None}, None))
        chunks = reply.chunks if reply.chunks is not None else [reply.text]
        deltas += [({"content": piece}, None) for piece in chunks if piece]
        return [*deltas, ({}, reply.finish_reason)]
    # Like the real API: text first when there is some, and the first call's head rides on the role delta otherwise.
    opening: Json = {"role": "assistant", "content": "" if reply.text else None}
    if reply.text:
        deltas += [({**opening, "refusal": None}, None), ({"content": reply.text}, None)]
    for index, call in enumerate(reply.calls):
        head: Json = {"index": index}
        if call.call_id is not None:
            head["id"] = call.call_id
        head |= {"type": "function", "function": {"name": call.name, "arguments": ""}}
        if index == 0 and not reply.text:
            deltas.append(({**opening, "tool_calls": [head], "refusal": None}, None))
        else:
            deltas.append(({"tool_calls": [head]}, None))
        deltas += [
            ({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}, None)
            for piece in _pieces(call.arguments_text, reply.argument_piece)
        ]
    if not reply.calls and not reply.text:
        deltas.append(({**opening, "refusal": None}, None))
    return [*deltas, ({}, "tool_calls")]


def completion_message(reply: TextReply | ToolCallsReply) -> tuple[Json, str]:
    """The ``message`` and finish reason of a non-streamed reply."""
    if isinstance(reply, TextReply):
        message: Json = {"role": "assistant", "content": reply.text, "refusal": None, "annotations": []}
        if reply.reasoning:
            message["reasoning_content"] = "".join(reply.reasoning)
        return message, reply.finish_reason
    calls = [
        {"id": call.call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_text}}
        for call in reply.calls
    ]
    message = {"role": "assistant", "content": reply.text or None, "refusal": None, "annotations": []}
    return {**message, "tool_calls": calls}, "tool_calls"


class LoopbackOpenAIServer:
    """An OpenAI chat-completions server on 127.0.0.1 running in a background thread, answering from a script.

    Every ``POST /v1/chat/completions`` takes the next reply of the queue; when the queue is empty it answers 500
    with an OpenAI-shaped error. ``GET /v1/models`` lists ``models``.

    Args:
        port: The port to listen on; 0 picks a free one.
        models: The model ids ``/v1/models`` lists.
        api_key: When set, requests without ``Authorization: Bearer <api_key>`` get OpenAI's 401.
    """

    def __init__(self, *, port: int = 0, models: Sequence[str] = ("gpt-test",), api_key: str | None = None) -> None:
        self._port = port
        self._models = tuple(models)
        self._api_key = api_key
        self._lock = threading.Lock()
        self._replies: collections.deque[Reply | ReplyFunction] = collections.deque()
        self._requests: list[Json] = []
        self._headers: list[dict[str, str]] = []
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._failure: BaseException | None = None
        self._counter = 0

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def __enter__(self) -> LoopbackOpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> LoopbackOpenAIServer:
        """Start serving; returns once the port is bound."""
        self._thread = threading.Thread(target=self._run, name="loopback-openai", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=15):
            raise RuntimeError("the loopback OpenAI server did not start in time")
        if self._failure is not None:
            raise RuntimeError("the loopback OpenAI server failed to start") from self._failure
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
        """The API's base URL, ending in ``/v1``."""
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def requests(self) -> list[Json]:
        """The JSON bodies of the chat-completions requests received, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers of the chat-completions requests received, in order (names lower-cased)."""
        with self._lock:
            return list(self._headers)

    @property
    def pending_replies(self) -> int:
        """How many scripted replies have not been used yet."""
        with self._lock:
            return len(self._replies)

    # -- script ----------------------------------------------------------------------------------------------------

    def enqueue(self, reply: Reply | ReplyFunction) -> LoopbackOpenAIServer:
        """Queue one reply (or a function of the request body returning one, or a text)."""
        with self._lock:
            self._replies.append(reply)
        return self

    def enqueue_text(
        self,
        text: str,
        *,
        chunks: Sequence[str] | None = None,
        usage: tuple[int, int] | None = None,
        reasoning: Sequence[str] | str = (),
        finish_reason: str = "stop",
        chunk_delay: float = 0.0,
    ) -> LoopbackOpenAIServer:
        """Queue a text answer; ``chunks`` are its streamed deltas (they must join to ``text``)."""
        if chunks is not None and "".join(chunks) != text:
            raise ValueError("chunks must join to the text")
        pieces = (reasoning,) if isinstance(reasoning, str) else tuple(reasoning)
        return self.enqueue(
            TextReply(
                text=text,
                chunks=chunks,
                usage=usage,
                reasoning=pieces,
                finish_reason=finish_reason,
                chunk_delay=chunk_delay,
            )
        )

    def enqueue_tool_calls(
        self,
        calls: Sequence[tuple[str | None, str, Mapping[str, Any] | str]],
        *,
        usage: tuple[int, int] | None = None,
        text: str = "",
        argument_piece: int = 5,
    ) -> LoopbackOpenAIServer:
        """Queue tool calls given as ``(call_id, name, arguments)``; a ``None`` id is left out of the wire."""
        scripted = [ScriptedCall(call_id=call_id, name=name, arguments=arguments) for call_id, name, arguments in calls]
        return self.enqueue(ToolCallsReply(calls=scripted, usage=usage, text=text, argument_piece=argument_piece))

    def enqueue_error(self, status: int, body: Json, headers: Mapping[str, str] | None = None) -> LoopbackOpenAIServer:
        """Queue an HTTP error with a JSON body."""
        return self.enqueue(ErrorReply(status=status, body=body, headers=dict(headers or {})))

    def enqueue_function(self, function: ReplyFunction) -> LoopbackOpenAIServer:
        """Queue a function that receives the request body and returns a reply or a text."""
        return self.enqueue(function)

    def enqueue_rate_limit(self, retry_after: float = 1) -> LoopbackOpenAIServer:
        """Queue OpenAI's 429 with a ``Retry-After`` header in seconds."""
        message = (
            "Rate limit reached for gpt-test in organization org-loopback on tokens per min (TPM): "
            f"Limit 30000, Used 30000, Requested 120. Please try again in {retry_after:g}s."
        )
        body = error_body(message, "tokens", code="rate_limit_exceeded")
        return self.enqueue_error(429, body, {"Retry-After": f"{retry_after:g}"})

    def enqueue_auth_error(self) -> LoopbackOpenAIServer:
        """Queue OpenAI's 401 for a wrong key."""
        message = (
            "Incorrect API key provided: sk-wron*****3456. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
        return self.enqueue_error(401, error_body(message, "invalid_request_error", code="invalid_api_key"))

    def enqueue_server_error(self) -> LoopbackOpenAIServer:
        """Queue OpenAI's 500."""
        message = "The server had an error while processing your request. Sorry about that!"
        return self.enqueue_error(500, error_body(message, "server_error"))

    def enqueue_overloaded(self) -> LoopbackOpenAIServer:
        """Queue OpenAI's 503 for an overloaded engine."""
        message = "The engine is currently overloaded, please try again later."
        return self.enqueue_error(503, error_body(message, "server_error"))

    def enqueue_context_length_exceeded(self, window: int = 8192, requested: int = 9000) -> LoopbackOpenAIServer:
        """Queue OpenAI's 400 ``context_length_exceeded``."""
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages resulted in "
            f"{requested} tokens. Please reduce the length of the messages."
        )
        body = error_body(message, "invalid_request_error", param="messages", code="context_length_exceeded")
        return self.enqueue_error(400, body)

    def enqueue_stream_error(self, message: str, *, before: Sequence[str] = ()) -> LoopbackOpenAIServer:
        """Queue a stream that fails after sending ``before`` as text deltas."""
        return self.enqueue(StreamErrorReply(error=error_body(message, "server_error")["error"], before=before))

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
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._list_models)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, "127.0.0.1", self._port)
            await site.start()
            self._port = int(runner.addresses[0][1])
            self._ready.set()
            await self._stop.wait()
        finally:
            await runner.cleanup()

    async def _list_models(self, request: web.Request) -> web.Response:
        data = [
            {"id": name, "object": "model", "created": 1_700_000_000, "owned_by": "loopback"} for name in self._models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            unparsable = error_body("We could not parse the JSON body of your request.", "invalid_request_error")
            return web.json_response(unparsable, status=400)
        authorized = self._api_key is None or request.headers.get("Authorization") == f"Bearer {self._api_key}"
        with self._lock:
            self._requests.append(body)
            self._headers.append({name.lower(): value for name, value in request.headers.items()})
            self._counter += 1
            number = self._counter
            scripted = self._replies.popleft() if self._replies and authorized else None
        if not authorized:
            unauthorized = error_body("Incorrect API key provided.", "invalid_request_error", code="invalid_api_key")
            return web.json_response(unauthorized, status=401)
        reply = self._resolve(scripted, body, number)
        if isinstance(reply, ErrorReply):
            return web.json_response(reply.body, status=reply.status, headers=dict(reply.headers))
        completion_id = f"chatcmpl-loopback{number:06d}"
        model = str(body.get("model", ""))
        if body.get("stream") is True:
            options = body.get("stream_options") or {}
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            return await self._stream(request, reply, completion_id, model, include_usage)
        if isinstance(reply, StreamErrorReply):
            return web.json_response({"error": reply.error}, status=500)
        message, finish_reason = completion_message(reply)
        answer: Json = {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
            "service_tier": "default",
            "system_fingerprint": "fp_loopback",
        }
        if reply.usage is not None:
            answer["usage"] = _usage(reply.usage)
        return web.json_response(answer)

    def _resolve(self, scripted: Reply | ReplyFunction | None, body: Json, number: int) -> Reply:
        if scripted is None:
            message = f"LoopbackOpenAIServer: the script ran out of replies at request #{number}"
            return ErrorReply(status=500, body=error_body(message, "server_error"))
        if not callable(scripted):
            return scripted
        try:
            produced = scripted(body)
        except Exception as exc:  # the test sees the failure as the provider's 500
            message = f"LoopbackOpenAIServer: the reply function failed: {exc!r}"
            return ErrorReply(status=500, body=error_body(message, "server_error"))
        return TextReply(text=produced) if isinstance(produced, str) else produced

    async def _stream(
        self, request: web.Request, reply: Reply, completion_id: str, model: str, include_usage: bool
    ) -> web.StreamResponse:
        assert not isinstance(reply, ErrorReply)
        response = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        created = int(time.time())
        delay = reply.chunk_delay if isinstance(reply, TextReply) else 0.0

        def chunk(choices: list[Json], usage: Json | None) -> Json:
            payload: Json = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "service_tier": "default",
                "system_fingerprint": "fp_loopback",
                "choices": choices,
            }
            if include_usage:
                payload["usage"] = usage
            return payload

        for delta, finish_reason in stream_deltas(reply):
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            await response.write(_event(chunk([choice], None)))
            if delay:
                await asyncio.sleep(delay)
        if isinstance(reply, StreamErrorReply):
            await response.write(_event({"error": reply.error}))
        elif include_usage and reply.usage is not None:
            await response.write(_event(chunk([], _usage(reply.usage))))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _event(payload: Json) -> bytes:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


def reply_from_json(item: Json) -> Reply:
    """Read one scripted reply of a ``--script`` file.

    Shapes: ``{"type": "text", "text", "chunks"?, "usage"?: [in, out], "reasoning"?}``,
    ``{"type": "tool_calls", "calls": [{"id"?, "name", "arguments"}], "usage"?, "text"?}``,
    ``{"type": "error", "status", "body", "headers"?}``.
    """
    usage = tuple(item["usage"]) if item.get("usage") is not None else None
    match item.get("type"):
        case "text":
            reasoning = item.get("reasoning") or ()
            return TextReply(
                text=item["text"],
                chunks=item.get("chunks"),
                usage=usage,
                reasoning=(reasoning,) if isinstance(reasoning, str) else tuple(reasoning),
            )
        case "tool_calls":
            calls = [ScriptedCall(call_id=c.get("id"), name=c["name"], arguments=c["arguments"]) for c in item["calls"]]
            return ToolCallsReply(calls=calls, usage=usage, text=item.get("text", ""))
        case "error":
            return ErrorReply(status=int(item["status"]), body=item["body"], headers=item.get("headers") or {})
    raise ValueError(f"unknown reply type {item.get('type')!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script file until SIGTERM/SIGINT; the base URL is the first line on stdout."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--script", type=Path, required=True, help="JSON file holding a list of replies")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    replies = [reply_from_json(item) for item in json.loads(args.script.read_text(encoding="utf-8"))]
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with LoopbackOpenAIServer(port=args.port) as server:
        for reply in replies:
            server.enqueue(reply)
        print(server.base_url, flush=True)
        while not done.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
