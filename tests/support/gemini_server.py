"""LoopbackGeminiServer: a scripted 127.0.0.1 server speaking the Gemini API (JSON and SSE) for tests."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from aiohttp import web

from tests.support.loopback_server import ErrorReply, Json, LoopbackHttpServer, serve_script

DEFAULT_SIGNATURE = base64.b64encode(b"loopback-thought-signature").decode()
"""The thought signature the first function call of a reply carries unless told otherwise, as Gemini 3 sends one."""


@dataclass(frozen=True, kw_only=True)
class TextReply:
    """An answer in text, optionally preceded by thought summaries (parts with ``thought: true``)."""

    text: str
    chunks: Sequence[str] | None = None
    thoughts: Sequence[str] = ()
    usage: tuple[int, int] | None = None
    thoughts_tokens: int | None = None
    finish_reason: str = "STOP"
    chunk_delay: float = 0.0


@dataclass(frozen=True, kw_only=True)
class ScriptedCall:
    """One function call; ``call_id`` is sent only when set (the Gemini API usually sends none)."""

    name: str
    args: Mapping[str, Any]
    call_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class FunctionCallsReply:
    """Function calls, sent whole in one chunk as Gemini does, the first carrying ``signature`` when it is set."""

    calls: Sequence[ScriptedCall]
    text: str = ""
    thoughts: Sequence[str] = ()
    usage: tuple[int, int] | None = None
    thoughts_tokens: int | None = None
    signature: str | None = DEFAULT_SIGNATURE


@dataclass(frozen=True, kw_only=True)
class BlockedReply:
    """A prompt blocked before any candidate: only ``promptFeedback`` comes back."""

    block_reason: str = "SAFETY"
    usage: tuple[int, int] | None = None


@dataclass(frozen=True, kw_only=True)
class StreamErrorReply:
    """A stream that sends some text, then an ``{"error": ...}`` event, as Google does when it fails mid-stream."""

    error: Json
    before: Sequence[str] = ()


@dataclass(frozen=True, kw_only=True)
class RecordedRequest:
    """One generate-content request as the server received it."""

    api_version: str
    model: str
    method: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Json

    @property
    def streaming(self) -> bool:
        """Whether this was ``streamGenerateContent``."""
        return self.method == "streamGenerateContent"


Reply: TypeAlias = TextReply | FunctionCallsReply | BlockedReply | ErrorReply | StreamErrorReply
ReplyFunction: TypeAlias = Callable[[Json], "Reply | str"]


def error_body(code: int, message: str, status: str, details: Sequence[Json] = ()) -> Json:
    """An error body exactly as Google shapes it."""
    error: Json = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return {"error": error}


def _usage(usage: tuple[int, int] | None, thoughts: int | None, share: float = 1.0) -> Json | None:
    if usage is None:
        return None
    prompt, candidates = usage
    so_far = round(candidates * share)
    metadata: Json = {"promptTokenCount": prompt, "candidatesTokenCount": so_far}
    total = prompt + so_far
    if thoughts is not None and share >= 1.0:
        metadata["thoughtsTokenCount"] = thoughts
        total += thoughts
    metadata["totalTokenCount"] = total
    metadata["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": prompt}]
    return metadata


def _call_parts(reply: FunctionCallsReply) -> list[Json]:
    parts: list[Json] = []
    for index, call in enumerate(reply.calls):
        function_call: Json = {"name": call.name, "args": dict(call.args)}
        if call.call_id is not None:
            function_call = {"id": call.call_id, **function_call}
        part: Json = {"functionCall": function_call}
        if index == 0 and reply.signature is not None:
            part["thoughtSignature"] = reply.signature
        parts.append(part)
    return parts


def stream_parts(reply: TextReply | FunctionCallsReply | StreamErrorReply) -> list[list[Json]]:
    """The parts of each streamed chunk of a reply, in the order Gemini sends them."""
    if isinstance(reply, StreamErrorReply):
        return [[{"text": piece}] for piece in reply.before]
    chunks: list[list[Json]] = [[{"text": piece, "thought": True}] for piece in reply.thoughts]
    if isinstance(reply, TextReply):
        pieces = reply.chunks if reply.chunks is not None else [reply.text]
        chunks += [[{"text": piece}] for piece in pieces if piece]
    else:
        if reply.text:
            chunks.append([{"text": reply.text}])
        chunks.append(_call_parts(reply))
    return chunks or [[{"text": ""}]]


def whole_parts(reply: TextReply | FunctionCallsReply) -> list[Json]:
    """The parts of a non-streamed reply: one thought summary, one text, then the calls."""
    parts: list[Json] = []
    if reply.thoughts:
        parts.append({"text": "".join(reply.thoughts), "thought": True})
    if reply.text:
        parts.append({"text": reply.text})
    if isinstance(reply, FunctionCallsReply):
        parts += _call_parts(reply)
    return parts or [{"text": ""}]


class LoopbackGeminiServer(LoopbackHttpServer[Reply, RecordedRequest]):
    """A Gemini API server on 127.0.0.1 running in a background thread, answering from a script.

    Every ``POST /v1beta/models/{model}:generateContent`` or ``:streamGenerateContent`` takes the next reply of the
    queue; when the queue is empty it answers Google's 500. ``GET /v1beta/models`` lists ``models``. ``requests``
    holds the generate-content requests as ``RecordedRequest``s; ``base_url`` is the root (the SDK appends
    ``v1beta/``).

    Args:
        port: The port to listen on; 0 picks a free one.
        models: The model ids ``/v1beta/models`` lists.
        api_key: When set, requests need it in ``x-goog-api-key`` (or ``?key=``), else they get Google's 403 (no
            key) or 400 ``API_KEY_INVALID`` (a wrong key).
    """

    _label = "Gemini"
    _path = "/"

    def __init__(self, *, port: int = 0, models: Sequence[str] = ("gemini-test",), api_key: str | None = None) -> None:
        super().__init__(port=port, models=models, api_key=api_key)
        self.count_requests: list[Json] = []
        """The bodies ``models/{model}:countTokens`` received (they take no reply of the queue)."""
        self.count_tokens: Callable[[Json], int] = lambda body: max(1, len(json.dumps(body)) // 4)
        """How ``countTokens`` counts a body (characters / 4 unless a test says otherwise)."""

    # -- script ----------------------------------------------------------------------------------------------------

    def enqueue_text(
        self,
        text: str,
        *,
        chunks: Sequence[str] | None = None,
        thoughts: Sequence[str] | str = (),
        usage: tuple[int, int] | None = None,
        thoughts_tokens: int | None = None,
        finish_reason: str = "STOP",
        chunk_delay: float = 0.0,
    ) -> LoopbackGeminiServer:
        """Queue a text answer; ``chunks`` are its streamed pieces (they must join to ``text``)."""
        if chunks is not None and "".join(chunks) != text:
            raise ValueError("chunks must join to the text")
        return self.enqueue(
            TextReply(
                text=text,
                chunks=chunks,
                thoughts=(thoughts,) if isinstance(thoughts, str) else tuple(thoughts),
                usage=usage,
                thoughts_tokens=thoughts_tokens,
                finish_reason=finish_reason,
                chunk_delay=chunk_delay,
            )
        )

    def enqueue_function_calls(
        self,
        calls: Sequence[tuple[str, Mapping[str, Any]] | ScriptedCall],
        *,
        text: str = "",
        thoughts: Sequence[str] = (),
        usage: tuple[int, int] | None = None,
        signature: str | None = DEFAULT_SIGNATURE,
    ) -> LoopbackGeminiServer:
        """Queue function calls given as ``(name, args)`` or ``ScriptedCall``."""
        scripted = [
            call if isinstance(call, ScriptedCall) else ScriptedCall(name=call[0], args=call[1]) for call in calls
        ]
        return self.enqueue(
            FunctionCallsReply(calls=scripted, text=text, thoughts=tuple(thoughts), usage=usage, signature=signature)
        )

    def enqueue_rate_limit(self, retry_delay: str = "37s", *, retry_after: str | None = None) -> LoopbackGeminiServer:
        """Queue Google's 429 RESOURCE_EXHAUSTED with its QuotaFailure, Help and RetryInfo details."""
        details: list[Json] = [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                        "quotaDimensions": {"location": "global", "model": "gemini-test"},
                        "quotaValue": "10",
                    }
                ],
            },
            {
                "@type": "type.googleapis.com/google.rpc.Help",
                "links": [
                    {
                        "description": "Learn more about Gemini API quotas",
                        "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
        ]
        message = (
            "You exceeded your current quota, please check your plan and billing details. For more information on "
            "this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
        )
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return self.enqueue_error(429, error_body(429, message, "RESOURCE_EXHAUSTED", details), headers)

    def enqueue_unavailable(self) -> LoopbackGeminiServer:
        """Queue Google's 503 UNAVAILABLE for an overloaded model."""
        return self.enqueue_error(
            503, error_body(503, "The model is overloaded. Please try again later.", "UNAVAILABLE")
        )

    def enqueue_internal(self) -> LoopbackGeminiServer:
        """Queue Google's 500 INTERNAL."""
        message = (
            "An internal error has occurred. Please retry or report in "
            "https://developers.generativeai.google/guide/troubleshooting"
        )
        return self.enqueue_error(500, error_body(500, message, "INTERNAL"))

    def enqueue_invalid_api_key(self) -> LoopbackGeminiServer:
        """Queue Google's answer to a wrong key: 400 INVALID_ARGUMENT with reason API_KEY_INVALID."""
        return self.enqueue_error(400, _invalid_key_body())

    def enqueue_permission_denied(self) -> LoopbackGeminiServer:
        """Queue Google's 403 PERMISSION_DENIED."""
        return self.enqueue_error(403, _permission_denied_body())

    def enqueue_unauthenticated(self) -> LoopbackGeminiServer:
        """Queue Google's 401 UNAUTHENTICATED."""
        message = (
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
            "valid authentication credential."
        )
        return self.enqueue_error(401, error_body(401, message, "UNAUTHENTICATED"))

    def enqueue_token_overflow(self, count: int = 1_200_000, limit: int = 1_048_576) -> LoopbackGeminiServer:
        """Queue Google's 400 INVALID_ARGUMENT for an input larger than the model's window."""
        message = f"The input token count ({count}) exceeds the maximum number of tokens allowed ({limit})."
        return self.enqueue_error(400, error_body(400, message, "INVALID_ARGUMENT"))

    def enqueue_stream_error(self, message: str, *, before: Sequence[str] = ()) -> LoopbackGeminiServer:
        """Queue a stream that fails with 500 INTERNAL after sending ``before`` as text chunks."""
        return self.enqueue(StreamErrorReply(error=error_body(500, message, "INTERNAL"), before=before))

    def enqueue_blocked(self, block_reason: str = "SAFETY") -> LoopbackGeminiServer:
        """Queue a prompt blocked by Google's filters."""
        return self.enqueue(BlockedReply(block_reason=block_reason, usage=(8, 0)))

    # -- serving ---------------------------------------------------------------------------------------------------

    def _add_routes(self, app: web.Application) -> None:
        app.router.add_post("/{version}/models/{target}", self._generate)
        app.router.add_get("/{version}/models", self._list_models)

    def _internal_error_body(self, message: str) -> Json:
        return error_body(500, message, "INTERNAL")

    def _text_reply(self, text: str) -> Reply:
        return TextReply(text=text)

    def _auth_error(self, request: web.Request) -> web.Response | None:
        if self._api_key is None:
            return None
        key = request.headers.get("x-goog-api-key") or request.query.get("key")
        if key == self._api_key:
            return None
        if not key:
            return web.json_response(_permission_denied_body(), status=403)
        return web.json_response(_invalid_key_body(), status=400)

    async def _list_models(self, request: web.Request) -> web.Response:
        if (denied := self._auth_error(request)) is not None:
            return denied
        models = [
            {
                "name": f"models/{name}",
                "version": "001",
                "displayName": name,
                "description": "A loopback model.",
                "inputTokenLimit": 1_048_576,
                "outputTokenLimit": 65_536,
                "supportedGenerationMethods": ["generateContent", "countTokens", "createCachedContent"],
                "temperature": 1,
                "topP": 0.95,
                "topK": 64,
                "maxTemperature": 2,
                "thinking": True,
            }
            for name in self._models
        ]
        return web.json_response({"models": models})

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        model, _, method = request.match_info["target"].rpartition(":")
        if method == "countTokens" and model:
            return await self._count_tokens(request)
        if method not in ("generateContent", "streamGenerateContent") or not model:
            message = f"Method not found: {request.match_info['target']}"
            return web.json_response(error_body(404, message, "NOT_FOUND"), status=404)
        try:
            body = await request.json()
        except ValueError:
            message = "Invalid JSON payload received. Unexpected token."
            return web.json_response(error_body(400, message, "INVALID_ARGUMENT"), status=400)
        denied = self._auth_error(request)
        recorded = RecordedRequest(
            api_version=request.match_info["version"],
            model=model,
            method=method,
            query=dict(request.query),
            headers={name.lower(): value for name, value in request.headers.items()},
            body=body,
        )
        number, scripted = self._take(recorded, request.headers, consume=denied is None)
        if denied is not None:
            return denied
        reply = self._resolve(scripted, body, number)
        if isinstance(reply, ErrorReply):
            return web.json_response(reply.body, status=reply.status, headers=dict(reply.headers))
        envelope = {"modelVersion": model, "responseId": f"loopback{number:06d}"}
        if method == "streamGenerateContent":
            return await self._stream(request, reply, envelope)
        if isinstance(reply, StreamErrorReply):
            return web.json_response(reply.error, status=500)
        return web.json_response(_whole_response(reply, envelope))

    async def _count_tokens(self, request: web.Request) -> web.Response:
        if (denied := self._auth_error(request)) is not None:
            return denied
        body = await request.json()
        if not isinstance(body, dict) or not body.get("contents"):
            message = "* CountTokensRequest.contents: contents is not specified"
            return web.json_response(error_body(400, message, "INVALID_ARGUMENT"), status=400)
        with self._lock:
            self.count_requests.append(body)
        return web.json_response({"totalTokens": self.count_tokens(body)})

    async def _stream(self, request: web.Request, reply: Reply, envelope: Json) -> web.StreamResponse:
        assert not isinstance(reply, ErrorReply)
        chunks = _stream_chunks(reply, envelope)
        if request.query.get("alt") != "sse":
            # Without alt=sse Google streams one JSON array; the SDK always asks for SSE.
            return web.json_response(chunks + ([reply.error] if isinstance(reply, StreamErrorReply) else []))
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        delay = reply.chunk_delay if isinstance(reply, TextReply) else 0.0
        for chunk in chunks:
            await response.write(_event(chunk))
            if delay:
                await asyncio.sleep(delay)
        if isinstance(reply, StreamErrorReply):
            await response.write(_event(reply.error))
        await response.write_eof()
        return response


def _candidate(parts: list[Json], finish_reason: str | None) -> Json:
    candidate: Json = {"content": {"parts": parts, "role": "model"}}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    candidate["index"] = 0
    return candidate


def _finish_reason(reply: TextReply | FunctionCallsReply) -> str:
    # Gemini reports STOP for a turn of function calls; the client infers the calls itself.
    return reply.finish_reason if isinstance(reply, TextReply) else "STOP"


def _whole_response(reply: Reply, envelope: Json) -> Json:
    if isinstance(reply, BlockedReply):
        answer: Json = {"promptFeedback": {"blockReason": reply.block_reason}}
        if (usage := _usage(reply.usage, None)) is not None:
            answer["usageMetadata"] = usage
        return answer | envelope
    assert isinstance(reply, TextReply | FunctionCallsReply)
    answer = {"candidates": [_candidate(whole_parts(reply), _finish_reason(reply))]}
    if (usage := _usage(reply.usage, reply.thoughts_tokens)) is not None:
        answer["usageMetadata"] = usage
    return answer | envelope


def _stream_chunks(reply: Reply, envelope: Json) -> list[Json]:
    if isinstance(reply, BlockedReply):
        return [_whole_response(reply, envelope)]
    assert not isinstance(reply, ErrorReply)
    pieces = stream_parts(reply)
    usage = None if isinstance(reply, StreamErrorReply) else reply.usage
    thoughts = None if isinstance(reply, StreamErrorReply) else reply.thoughts_tokens
    chunks: list[Json] = []
    for number, parts in enumerate(pieces, start=1):
        last = number == len(pieces) and not isinstance(reply, StreamErrorReply)
        finish = _finish_reason(reply) if last and not isinstance(reply, StreamErrorReply) else None
        chunk: Json = {"candidates": [_candidate(parts, finish)]}
        # Every chunk carries the running counts, as Gemini's do; only the last one is complete.
        if (metadata := _usage(usage, thoughts, number / len(pieces))) is not None:
            chunk["usageMetadata"] = metadata
        chunks.append(chunk | envelope)
    return chunks


def _event(payload: Json) -> bytes:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\r\n\r\n".encode()


def _invalid_key_body() -> Json:
    details: list[Json] = [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
            "metadata": {"service": "generativelanguage.googleapis.com"},
        },
        {
            "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
            "locale": "en-US",
            "message": "API key not valid.",
        },
    ]
    return error_body(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT", details)


def _permission_denied_body() -> Json:
    message = (
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or "
        "other form of API consumer identity to call this API."
    )
    return error_body(403, message, "PERMISSION_DENIED")


def reply_from_json(item: Json) -> Reply:
    """Read one scripted reply of a ``--script`` file.

    Shapes: ``{"type": "text", "text", "chunks"?, "thoughts"?, "usage"?: [prompt, candidates]}``,
    ``{"type": "function_calls", "calls": [{"name", "args", "id"?}], "text"?, "usage"?}``,
    ``{"type": "error", "status", "body", "headers"?}``.
    """
    usage = tuple(item["usage"]) if item.get("usage") is not None else None
    match item.get("type"):
        case "text":
            thoughts = item.get("thoughts") or ()
            return TextReply(
                text=item["text"],
                chunks=item.get("chunks"),
                thoughts=(thoughts,) if isinstance(thoughts, str) else tuple(thoughts),
                usage=usage,
            )
        case "function_calls":
            calls = [ScriptedCall(name=c["name"], args=c.get("args") or {}, call_id=c.get("id")) for c in item["calls"]]
            return FunctionCallsReply(calls=calls, text=item.get("text", ""), usage=usage)
        case "error":
            return ErrorReply(status=int(item["status"]), body=item["body"], headers=item.get("headers") or {})
    raise ValueError(f"unknown reply type {item.get('type')!r}")


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script file until SIGTERM/SIGINT; the base URL is the first line on stdout."""
    return serve_script(lambda port: LoopbackGeminiServer(port=port), reply_from_json, argv, __doc__)


__all__ = [
    "DEFAULT_SIGNATURE",
    "BlockedReply",
    "ErrorReply",
    "FunctionCallsReply",
    "Json",
    "LoopbackGeminiServer",
    "RecordedRequest",
    "Reply",
    "ReplyFunction",
    "ScriptedCall",
    "StreamErrorReply",
    "TextReply",
    "error_body",
    "main",
    "reply_from_json",
    "stream_parts",
    "whole_parts",
]


if __name__ == "__main__":
    sys.exit(main())
