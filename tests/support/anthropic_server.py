"""LoopbackAnthropicServer: a scripted 127.0.0.1 server speaking Anthropic's Messages API (JSON and SSE) for tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from aiohttp import web

from tests.support.loopback_server import ErrorReply, Json, LoopbackHttpServer, ScriptedCall, pieces

SIGNATURE = "EqQBCkgIARABGAIiQLoopbackSignatureOfThinking0123456789abcdefAAAA=="
"""The signature the server puts on thinking blocks unless a reply names another."""
_DOCS = "Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
# The HTTP status of each error type (https://docs.claude.com/en/api/errors), for a stream error asked without SSE.
ERROR_STATUS = {"invalid_request_error": 400, "rate_limit_error": 429, "timeout_error": 504, "overloaded_error": 529}


@dataclass(frozen=True, kw_only=True)
class TokenUsage:
    """Token counts as the API reports them; ``input_tokens`` excludes the cache's tokens, as on the wire."""

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def to_json(self, *, output_tokens: int | None = None) -> Json:
        """The ``usage`` object of a message (``message_start`` states the output so far)."""
        created = self.cache_creation_input_tokens
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {"ephemeral_5m_input_tokens": created, "ephemeral_1h_input_tokens": 0},
            "output_tokens": self.output_tokens if output_tokens is None else output_tokens,
            "service_tier": "standard",
        }


UsageSpec: TypeAlias = "tuple[int, int] | TokenUsage | None"


@dataclass(frozen=True, kw_only=True)
class MessageReply:
    """An answer: an optional thinking block, text, then tool calls, with the API's block and event order.

    Attributes:
        chunks: The text's streamed deltas (``None``: one delta).
        thinking: The thinking block's streamed deltas, followed by a ``signature_delta`` of ``signature``.
        argument_piece: The length of the ``input_json_delta`` pieces of each call's input.
        stop_reason: ``None`` means ``tool_use`` when there are calls, else ``end_turn``.
        usage: ``None`` estimates it from the request and the answer (characters / 4).
    """

    text: str = ""
    chunks: Sequence[str] | None = None
    thinking: Sequence[str] = ()
    signature: str = SIGNATURE
    calls: Sequence[ScriptedCall] = ()
    argument_piece: int = 5
    stop_reason: str | None = None
    usage: TokenUsage | None = None
    chunk_delay: float = 0.0

    @property
    def final_stop_reason(self) -> str:
        """The ``stop_reason`` the message ends with."""
        return self.stop_reason or ("tool_use" if self.calls else "end_turn")


@dataclass(frozen=True, kw_only=True)
class StreamErrorReply:
    """A stream that sends ``before`` as text, then an SSE ``error`` event, as the API does when it fails mid-stream."""

    error_type: str
    message: str
    before: Sequence[str] = ()


Reply: TypeAlias = MessageReply | ErrorReply | StreamErrorReply
ReplyFunction: TypeAlias = Callable[[Json], "Reply | str"]


def error_body(error_type: str, message: str, *, request_id: str = "req_011CLoopback0000000000") -> Json:
    """An error body exactly as Anthropic shapes it."""
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": request_id}


def _input_object(call: ScriptedCall) -> Json:
    # A whole message must carry an object; a malformed scripted string can only be streamed.
    if not isinstance(call.arguments, str):
        return dict(call.arguments)
    with contextlib.suppress(ValueError):
        value = json.loads(call.arguments)
        if isinstance(value, dict):
            return value
    return {}


def content_blocks(reply: MessageReply, call_ids: Sequence[str]) -> list[Json]:
    """The complete content blocks of a reply, as a non-streamed message holds them."""
    blocks: list[Json] = []
    if reply.thinking:
        blocks.append({"type": "thinking", "thinking": "".join(reply.thinking), "signature": reply.signature})
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    calls = zip(call_ids, reply.calls, strict=True)
    return blocks + [{"type": "tool_use", "id": i, "name": c.name, "input": _input_object(c)} for i, c in calls]


def message_json(message_id: str, model: str, content: list[Json], stop_reason: str | None, usage: Json) -> Json:
    """A message object as the API returns it (whole, or empty in ``message_start``)."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def stream_events(
    reply: MessageReply | StreamErrorReply,
    call_ids: Sequence[str] = (),
    *,
    message_id: str = "msg_01Loopback",
    model: str = "claude-test",
    usage: TokenUsage | None = None,
) -> list[tuple[str, Json]]:
    """The ``(event, data)`` pairs of a streamed reply, in the order the real API sends them.

    ``message_start`` carries the input usage (and one output token), ``message_delta`` the final output count alone,
    as the API documents it; a ``ping`` follows the first ``content_block_start``.
    """
    usage = usage or TokenUsage(input_tokens=1, output_tokens=1)
    message = message_json(message_id, model, [], None, usage.to_json(output_tokens=1))
    events: list[tuple[str, Json]] = [("message_start", {"type": "message_start", "message": message})]
    blocks: list[tuple[Json, list[Json]]] = []  # (the content_block_start block, its deltas)
    if isinstance(reply, StreamErrorReply):
        blocks.append(({"type": "text", "text": ""}, [{"type": "text_delta", "text": piece} for piece in reply.before]))
    else:
        if reply.thinking:
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in reply.thinking]
            deltas.append({"type": "signature_delta", "signature": reply.signature})
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
        if reply.text:
            chunks = reply.chunks if reply.chunks is not None else [reply.text]
            blocks.append(({"type": "text", "text": ""}, [{"type": "text_delta", "text": c} for c in chunks if c]))
        for call_id, call in zip(call_ids, reply.calls, strict=True):
            parts = ["", *pieces(call.arguments_text, reply.argument_piece)]
            start = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
            blocks.append((start, [{"type": "input_json_delta", "partial_json": piece} for piece in parts]))
    for index, (start, deltas) in enumerate(blocks):
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        if index == 0:
            events.append(("ping", {"type": "ping"}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        if not isinstance(reply, StreamErrorReply):
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    if isinstance(reply, StreamErrorReply):
        return [*events, ("error", {"type": "error", "error": {"type": reply.error_type, "message": reply.message}})]
    delta = {"stop_reason": reply.final_stop_reason, "stop_sequence": None}
    events.append(
        ("message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": usage.output_tokens}})
    )
    return [*events, ("message_stop", {"type": "message_stop"})]


def validate_request(body: Json) -> str | None:
    """The ``invalid_request_error`` message the real API would answer ``body`` with, or ``None`` if it is valid."""
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return f"{name}: Field required"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if (marked := sum(1 for block in _all_blocks(body) if block.get("cache_control"))) > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {marked}."
    if "tool_choice" in body and not body.get("tools"):
        return "tool_choice: tool_choice may only be specified while providing tools."
    if problem := _tool_pairing_problem(messages):
        return problem
    thinking = body.get("thinking") or {}
    if thinking.get("type") == "enabled" and thinking.get("budget_tokens", 0) < 1024:
        return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    if thinking.get("type") == "enabled" and thinking["budget_tokens"] >= body["max_tokens"]:
        return f"`max_tokens` must be greater than `thinking.budget_tokens`. {_DOCS}"
    return _thinking_problem(body, messages) if thinking.get("type") in ("enabled", "adaptive") else None


def _all_blocks(body: Json) -> list[Json]:
    system = body.get("system")
    blocks = [block for block in system if isinstance(block, dict)] if isinstance(system, list) else []
    blocks += [tool for tool in body.get("tools") or () if isinstance(tool, dict)]
    for message in body["messages"]:
        content = message.get("content")
        blocks += [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    return blocks


def _tool_pairing_problem(messages: list[Json]) -> str | None:
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if any(block.get("type") == "text" and not str(block.get("text", "")).strip() for block in blocks):
            return "messages: text content blocks must contain non-whitespace text"
        types = [block.get("type") for block in blocks]
        if types[: types.count("tool_result")] != ["tool_result"] * types.count("tool_result"):
            return f"messages.{index}.content: `tool_result` blocks must come before any other content"
        if message.get("role") != "assistant" or index + 1 == len(messages):
            continue
        called = {str(block["id"]) for block in blocks if block.get("type") == "tool_use"}
        following = messages[index + 1].get("content")
        following = following if isinstance(following, list) else []
        answered = {str(block.get("tool_use_id")) for block in following if block.get("type") == "tool_result"}
        if missing := sorted(called - answered):
            return (
                f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
                "next message."
            )
        if unexpected := sorted(answered - called):
            return (
                f"messages.{index + 1}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{', '.join(unexpected)}. Each `tool_result` block must have a corresponding `tool_use` block in "
                "the previous message."
            )
    return None


def _thinking_problem(body: Json, messages: list[Json]) -> str | None:
    if body.get("temperature") not in (None, 1):
        return f"`temperature` may only be set to 1 when thinking is enabled or in adaptive mode. {_DOCS}"
    if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        return "Thinking may not be enabled when tool_choice forces tool use."
    assistants = [(i, m) for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if not assistants or not isinstance(assistants[-1][1].get("content"), list):
        return None
    index, last = assistants[-1]
    types = [block.get("type") for block in last["content"]]
    if "tool_use" not in types or types[0] in ("thinking", "redacted_thinking"):
        return None
    return (
        f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{types[0]}`. When "
        "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
        "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
        f"previous turns. To avoid this requirement, disable `thinking`. {_DOCS}"
    )


class LoopbackAnthropicServer(LoopbackHttpServer[Reply, Json]):
    """An Anthropic Messages API server on 127.0.0.1 running in a background thread, answering from a script.

    Every ``POST /v1/messages`` is checked as the real API checks it (``anthropic-version`` header, key, the request
    rules of ``validate_request``; a violation answers 400 and uses no reply), then takes the next reply of the queue;
    when the queue is empty it answers 500 ``api_error``. ``GET /v1/models`` lists ``models`` with the API's
    cursor pagination. ``base_url`` has no ``/v1``: the SDK adds it.

    Args:
        port: The port to listen on; 0 picks a free one.
        models: The model ids ``/v1/models`` lists, newest first.
        api_key: When set, requests without it (``x-api-key`` or ``Authorization: Bearer``) get Anthropic's 401.
    """

    _label = "Anthropic"

    def __init__(
        self, *, port: int = 0, models: Sequence[str] = ("claude-test", "claude-test-small"), api_key: str | None = None
    ) -> None:
        super().__init__(port=port, models=models, api_key=api_key)
        self._calls = 0
        self.count_requests: list[Json] = []
        """The bodies ``POST /v1/messages/count_tokens`` received (they take no reply of the queue)."""
        self.count_tokens: Callable[[Json], int] = lambda body: _estimated_usage(body, MessageReply()).input_tokens
        """How the count endpoint counts a body (characters / 4 unless a test says otherwise)."""

    # -- script ----------------------------------------------------------------------------------------------------

    def enqueue_text(
        self,
        text: str,
        *,
        chunks: Sequence[str] | None = None,
        thinking: Sequence[str] | str = (),
        usage: UsageSpec = None,
        stop_reason: str = "end_turn",
        chunk_delay: float = 0.0,
    ) -> LoopbackAnthropicServer:
        """Queue a text answer; ``chunks`` are its streamed deltas (they must join to ``text``)."""
        if chunks is not None and "".join(chunks) != text:
            raise ValueError("chunks must join to the text")
        pieces = (thinking,) if isinstance(thinking, str) else tuple(thinking)
        reply = MessageReply(text=text, chunks=chunks, thinking=pieces, stop_reason=stop_reason, usage=_usage(usage))
        return self.enqueue(replace(reply, chunk_delay=chunk_delay))

    def enqueue_tool_use(
        self,
        calls: Sequence[tuple[str | None, str, Mapping[str, Any] | str]],
        *,
        text: str = "",
        thinking: Sequence[str] | str = (),
        usage: UsageSpec = None,
        argument_piece: int = 5,
    ) -> LoopbackAnthropicServer:
        """Queue tool calls given as ``(call_id, name, arguments)``; a ``None`` id gets a ``toolu_`` id."""
        scripted = [ScriptedCall(call_id=call_id, name=name, arguments=arguments) for call_id, name, arguments in calls]
        pieces = (thinking,) if isinstance(thinking, str) else tuple(thinking)
        reply = MessageReply(text=text, thinking=pieces, calls=scripted, argument_piece=argument_piece)
        return self.enqueue(replace(reply, usage=_usage(usage)))

    def enqueue_rate_limit(self, retry_after: float = 1) -> LoopbackAnthropicServer:
        """Queue Anthropic's 429 ``rate_limit_error`` with ``retry-after`` and rate-limit headers."""
        message = (
            "This request would exceed the rate limit for your organization (loopback) of 50,000 input tokens per "
            "minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response "
            "headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try "
            "again later."
        )
        headers = {
            "retry-after": f"{retry_after:g}",
            "anthropic-ratelimit-input-tokens-limit": "50000",
            "anthropic-ratelimit-input-tokens-remaining": "0",
            "anthropic-ratelimit-input-tokens-reset": "2026-01-01T00:00:30Z",
        }
        return self.enqueue_error(429, error_body("rate_limit_error", message), headers)

    def enqueue_overloaded(self) -> LoopbackAnthropicServer:
        """Queue Anthropic's 529 ``overloaded_error``."""
        return self.enqueue_error(529, error_body("overloaded_error", "Overloaded"))

    def enqueue_server_error(self) -> LoopbackAnthropicServer:
        """Queue Anthropic's 500 ``api_error``."""
        return self.enqueue_error(500, error_body("api_error", "Internal server error"))

    def enqueue_auth_error(self) -> LoopbackAnthropicServer:
        """Queue Anthropic's 401 for a wrong key."""
        return self.enqueue_error(401, error_body("authentication_error", "invalid x-api-key"))

    def enqueue_permission_error(self) -> LoopbackAnthropicServer:
        """Queue Anthropic's 403."""
        message = "Your API key does not have permission to use the specified resource."
        return self.enqueue_error(403, error_body("permission_error", message))

    def enqueue_prompt_too_long(self, *, tokens: int = 210_000, window: int = 200_000) -> LoopbackAnthropicServer:
        """Queue Anthropic's 400 for a prompt larger than the context window."""
        message = f"prompt is too long: {tokens} tokens > {window} maximum"
        return self.enqueue_error(400, error_body("invalid_request_error", message))

    def enqueue_stream_error(
        self, error_type: str = "overloaded_error", message: str = "Overloaded", *, before: Sequence[str] = ()
    ) -> LoopbackAnthropicServer:
        """Queue a stream that fails with an SSE ``error`` event after sending ``before`` as text deltas."""
        return self.enqueue(StreamErrorReply(error_type=error_type, message=message, before=before))

    # -- serving ---------------------------------------------------------------------------------------------------

    def _add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_get("/v1/models", self._list_models)

    def _internal_error_body(self, message: str) -> Json:
        return error_body("api_error", message)

    def _text_reply(self, text: str) -> Reply:
        return MessageReply(text=text)

    def _refusal(self, request: web.Request) -> web.Response | None:
        if "anthropic-version" not in request.headers:
            return _error_response(400, "invalid_request_error", "anthropic-version: header is required")
        if self._api_key is not None:
            offered = request.headers.get("x-api-key") or request.headers.get("Authorization", "").removeprefix(
                "Bearer "
            )
            if offered != self._api_key:
                return _error_response(401, "authentication_error", "invalid x-api-key")
        return None

    async def _list_models(self, request: web.Request) -> web.Response:
        if (refusal := self._refusal(request)) is not None:
            return refusal
        ids = list(self._models)
        limit = int(request.query.get("limit", "20"))
        if after := request.query.get("after_id"):
            ids = ids[ids.index(after) + 1 :] if after in ids else []
        page = ids[:limit]
        data = [
            {
                "type": "model",
                "id": model_id,
                "display_name": model_id.replace("-", " ").title(),
                "created_at": "2026-01-01T00:00:00Z",
                "lifecycle": "active",
                "max_input_tokens": 200_000,
                "max_tokens": 64_000,
            }
            for model_id in page
        ]
        first, last = (page[0], page[-1]) if page else (None, None)
        return web.json_response({"data": data, "has_more": len(ids) > len(page), "first_id": first, "last_id": last})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return _error_response(400, "invalid_request_error", "There was an error parsing the body of your request.")
        refusal = self._refusal(request)
        invalid = validate_request(body) if refusal is None and isinstance(body, dict) else None
        number, scripted = self._take(body, request.headers, consume=refusal is None and invalid is None)
        if refusal is not None:
            return refusal
        if invalid is not None:
            return _error_response(400, "invalid_request_error", invalid)
        reply = self._resolve(scripted, body, number)
        if isinstance(reply, ErrorReply):
            return web.json_response(
                reply.body, status=reply.status, headers={"request-id": "req_011CLoopback", **reply.headers}
            )
        message_id = f"msg_01Loopback{number:012d}"
        model = str(body.get("model", ""))
        call_ids = self._call_ids(reply)
        usage = _estimated_usage(body, reply) if isinstance(reply, StreamErrorReply) or not reply.usage else reply.usage
        if body.get("stream") is True:
            return await self._stream(request, reply, call_ids, message_id, model, usage)
        if isinstance(reply, StreamErrorReply):
            return _error_response(ERROR_STATUS.get(reply.error_type, 500), reply.error_type, reply.message)
        content = content_blocks(reply, call_ids)
        return web.json_response(message_json(message_id, model, content, reply.final_stop_reason, usage.to_json()))

    async def _count_tokens(self, request: web.Request) -> web.Response:
        if (refusal := self._refusal(request)) is not None:
            return refusal
        body = await request.json()
        if not isinstance(body, dict) or not body.get("messages") or "model" not in body:
            return _error_response(400, "invalid_request_error", "model and messages: Field required")
        with self._lock:
            self.count_requests.append(body)
        return web.json_response({"input_tokens": self.count_tokens(body)})

    def _call_ids(self, reply: Reply) -> list[str]:
        if not isinstance(reply, MessageReply):
            return []
        ids: list[str] = []
        with self._lock:
            for call in reply.calls:
                self._calls += 1
                ids.append(call.call_id or f"toolu_01Loopback{self._calls:012d}")
        return ids

    async def _stream(
        self,
        request: web.Request,
        reply: MessageReply | StreamErrorReply,
        call_ids: Sequence[str],
        message_id: str,
        model: str,
        usage: TokenUsage,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            status=200,
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "request-id": "req_011CLoopback",
            },
        )
        await response.prepare(request)
        delay = reply.chunk_delay if isinstance(reply, MessageReply) else 0.0
        for name, data in stream_events(reply, call_ids, message_id=message_id, model=model, usage=usage):
            await response.write(f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode())
            if delay and name == "content_block_delta":
                await asyncio.sleep(delay)
        await response.write_eof()
        return response


def _usage(usage: UsageSpec) -> TokenUsage | None:
    if usage is None or isinstance(usage, TokenUsage):
        return usage
    return TokenUsage(input_tokens=usage[0], output_tokens=usage[1])


def _estimated_usage(body: Json, reply: MessageReply | StreamErrorReply) -> TokenUsage:
    """Plausible counts (characters / 4) for a reply that scripted none."""
    prompt = json.dumps([body.get("system"), body.get("messages"), body.get("tools")])
    if isinstance(reply, StreamErrorReply):
        answer = "".join(reply.before)
    else:
        answer = "".join([reply.text, *reply.thinking, *(call.arguments_text for call in reply.calls)])
    return TokenUsage(input_tokens=max(1, len(prompt) // 4), output_tokens=max(1, len(answer) // 4))


def _error_response(status: int, error_type: str, message: str) -> web.Response:
    return web.json_response(error_body(error_type, message), status=status, headers={"request-id": "req_011CLoopback"})


__all__ = [
    "ERROR_STATUS",
    "SIGNATURE",
    "ErrorReply",
    "Json",
    "LoopbackAnthropicServer",
    "MessageReply",
    "Reply",
    "ReplyFunction",
    "ScriptedCall",
    "StreamErrorReply",
    "TokenUsage",
    "UsageSpec",
    "content_blocks",
    "error_body",
    "message_json",
    "stream_events",
    "validate_request",
]
