"""LoopbackOpenAIServer: a scripted 127.0.0.1 server speaking OpenAI chat completions and Responses for tests."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from aiohttp import web

from tests.support import openai_responses
from tests.support.loopback_server import ErrorReply, Json, LoopbackHttpServer, ScriptedCall, pieces, serve_script


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
class ToolCallsReply:
    """Tool calls, their arguments split over several deltas of ``argument_piece`` characters as the real API does."""

    calls: Sequence[ScriptedCall]
    usage: tuple[int, int] | None = None
    text: str = ""
    argument_piece: int = 5
    reasoning: Sequence[str] = ()  # served on /v1/responses only (a reasoning summary before the calls)


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
            for piece in pieces(call.arguments_text, reply.argument_piece)
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


class LoopbackOpenAIServer(LoopbackHttpServer[Reply, Json]):
    """An OpenAI chat-completions server on 127.0.0.1 running in a background thread, answering from a script.

    Every ``POST /v1/chat/completions`` takes the next reply of the queue; when the queue is empty it answers 500
    with an OpenAI-shaped error. ``POST /v1/responses`` (the Responses API, JSON or SSE) takes from the same queue:
    text (reasoning as a reasoning item's summary, with encrypted content when the request includes it), tool calls
    as function calls, a stream error as ``response.failed``, finish reason ``length`` as ``response.incomplete``.
    ``GET /v1/models`` lists ``models``. ``requests`` holds the JSON bodies of the
    requests of both, in order.

    Args:
        port: The port to listen on; 0 picks a free one.
        models: The model ids ``/v1/models`` lists.
        api_key: When set, requests without ``Authorization: Bearer <api_key>`` get OpenAI's 401.
        latency: Seconds every scripted answer waits before its first byte (a model's fixed response time; the
            server's loop keeps serving other requests meanwhile).
    """

    _label = "OpenAI"
    _path = "/v1"

    def __init__(
        self,
        *,
        port: int = 0,
        models: Sequence[str] = ("gpt-test",),
        api_key: str | None = None,
        latency: float = 0.0,
    ) -> None:
        if latency < 0:
            raise ValueError("latency must not be negative")
        super().__init__(port=port, models=models, api_key=api_key)
        self._latency = latency

    # -- script ----------------------------------------------------------------------------------------------------

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
        reasoning: Sequence[str] | str = (),
    ) -> LoopbackOpenAIServer:
        """Queue tool calls given as ``(call_id, name, arguments)``; a ``None`` id is left out of the wire.
        ``reasoning`` is a summary streamed before them on ``/v1/responses`` (chat completions ignore it)."""
        scripted = [ScriptedCall(call_id=call_id, name=name, arguments=arguments) for call_id, name, arguments in calls]
        summary = (reasoning,) if isinstance(reasoning, str) else tuple(reasoning)
        reply = ToolCallsReply(calls=scripted, usage=usage, text=text, argument_piece=argument_piece, reasoning=summary)
        return self.enqueue(reply)

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

    def _add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_get("/v1/models", self._list_models)

    def _internal_error_body(self, message: str) -> Json:
        return error_body(message, "server_error")

    def _text_reply(self, text: str) -> Reply:
        return TextReply(text=text)

    async def _list_models(self, request: web.Request) -> web.Response:
        data = [
            {"id": name, "object": "model", "created": 1_700_000_000, "owned_by": "loopback"} for name in self._models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _scripted_reply(self, request: web.Request) -> tuple[Json, int, Reply] | web.Response:
        """The request's body, number and scripted reply, or the error response OpenAI would send instead (a body
        that is not JSON, a wrong key, a scripted error)."""
        try:
            body = await request.json()
        except ValueError:
            unparsable = error_body("We could not parse the JSON body of your request.", "invalid_request_error")
            return web.json_response(unparsable, status=400)
        authorized = self._api_key is None or request.headers.get("Authorization") == f"Bearer {self._api_key}"
        number, scripted = self._take(body, request.headers, consume=authorized)
        if not authorized:
            unauthorized = error_body("Incorrect API key provided.", "invalid_request_error", code="invalid_api_key")
            return web.json_response(unauthorized, status=401)
        reply = self._resolve(scripted, body, number)
        if isinstance(reply, ErrorReply):
            return web.json_response(reply.body, status=reply.status, headers=dict(reply.headers))
        if self._latency:
            await asyncio.sleep(self._latency)
        return body, number, reply

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        taken = await self._scripted_reply(request)
        if isinstance(taken, web.Response):
            return taken
        body, number, reply = taken
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

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/responses`` (the Responses API): the reply whole or streamed as its SSE events."""
        taken = await self._scripted_reply(request)
        if isinstance(taken, web.Response):
            return taken
        body, number, reply = taken
        events, final = openai_responses.shaped_events(body, number, responses_shape(reply, number))
        if body.get("stream") is not True:
            if final["status"] == "failed":
                return web.json_response(
                    {"error": {**final["error"], "type": "server_error", "param": None}}, status=500
                )
            return web.json_response(final)
        response = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        delay = reply.chunk_delay if isinstance(reply, TextReply) else 0.0
        for event in events:
            await response.write(openai_responses.sse(event))
            if delay and event["type"] == "response.output_text.delta":
                await asyncio.sleep(delay)
        await response.write_eof()
        return response

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


_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def responses_shape(reply: Reply, number: int) -> openai_responses.ResponsesShape:
    """What a scripted reply looks like as a Responses answer (a call without an id gets one: the API always sends
    ``call_id``)."""
    assert not isinstance(reply, ErrorReply)
    if isinstance(reply, StreamErrorReply):
        message = str(reply.error.get("message", ""))
        return openai_responses.ResponsesShape(chunks=reply.before, failure=("server_error", message))
    if isinstance(reply, TextReply):
        return openai_responses.ResponsesShape(
            reasoning=reply.reasoning,
            chunks=reply.chunks if reply.chunks is not None else [reply.text],
            usage=reply.usage,
            incomplete=_INCOMPLETE.get(reply.finish_reason),
        )
    calls = [
        (call.call_id or f"call_loopback{number:06d}_{index}", call.name, call.arguments_text)
        for index, call in enumerate(reply.calls)
    ]
    return openai_responses.ResponsesShape(
        reasoning=reply.reasoning,
        chunks=[reply.text] if reply.text else [],
        calls=calls,
        argument_piece=reply.argument_piece,
        usage=reply.usage,
    )


def _event(payload: Json) -> bytes:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


def reply_from_json(item: Json) -> Reply:
    """Read one scripted reply of a ``--script`` file.

    Shapes: ``{"type": "text", "text", "chunks"?, "usage"?: [in, out], "reasoning"?}``,
    ``{"type": "tool_calls", "calls": [{"id"?, "name", "arguments"}], "usage"?, "text"?, "reasoning"?}``,
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
            reasoning = item.get("reasoning") or ()
            return ToolCallsReply(
                calls=calls,
                usage=usage,
                text=item.get("text", ""),
                reasoning=(reasoning,) if isinstance(reasoning, str) else tuple(reasoning),
            )
        case "error":
            return ErrorReply(status=int(item["status"]), body=item["body"], headers=item.get("headers") or {})
    raise ValueError(f"unknown reply type {item.get('type')!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script file until SIGTERM/SIGINT; the base URL is the first line on stdout."""
    return serve_script(lambda port: LoopbackOpenAIServer(port=port), reply_from_json, argv, __doc__)


__all__ = [
    "ErrorReply",
    "Json",
    "LoopbackOpenAIServer",
    "Reply",
    "ReplyFunction",
    "ScriptedCall",
    "StreamErrorReply",
    "TextReply",
    "ToolCallsReply",
    "completion_message",
    "error_body",
    "main",
    "reply_from_json",
    "responses_shape",
    "stream_deltas",
]


if __name__ == "__main__":
    sys.exit(main())
