"""The OpenAI Responses API's wire shapes (reasoning, text and function calls, whole or as SSE events) for the
loopback OpenAI server."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.support.loopback_server import pieces

Json = dict[str, Any]


def usage_json(usage: tuple[int, int] | None, *, cached: int = 0, reasoning: int = 0) -> Json | None:
    """A Responses ``usage`` object from ``(input, output)`` tokens (``cached`` within input, ``reasoning`` within
    output)."""
    if usage is None:
        return None
    prompt, completion = usage
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": prompt + completion,
    }


def _text_part(text: str) -> Json:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def _message_item(item_id: str, text: str | None) -> Json:
    """The assistant message item: empty and in progress (``text`` is ``None``), or completed."""
    content = [] if text is None else [_text_part(text)]
    status = "in_progress" if text is None else "completed"
    return {"id": item_id, "type": "message", "status": status, "content": content, "role": "assistant"}


def response_json(
    body: Json,
    response_id: str,
    *,
    created_at: int,
    output: list[Json],
    usage: tuple[int, int] | None,
    status: str | None = None,
    incomplete: str | None = None,
    error: Json | None = None,
    usage_details: tuple[int, int] = (0, 0),
) -> Json:
    """A ``response`` object as the API returns it (in progress while ``output`` is empty and no ``status`` given;
    ``incomplete`` names why it was cut, ``error`` why it failed)."""
    done = bool(output) or status is not None
    status = status or ("completed" if done else "in_progress")
    asked = body.get("reasoning")
    reasoning: Json = asked if isinstance(asked, dict) else {}
    cached, reasoning_tokens = usage_details
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": str(body.get("model", "")),
        "output": output,
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "service_tier": "default",
        "store": bool(body.get("store", True)),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": usage_json(usage, cached=cached, reasoning=reasoning_tokens) if done else None,
        "user": None,
        "metadata": {},
    }


def whole_response(body: Json, number: int, text: str, usage: tuple[int, int] | None) -> Json:
    """The completed ``response`` of a non-streamed request answered with ``text``."""
    response_id, item_id = f"resp_loopback{number:06d}", f"msg_loopback{number:06d}"
    output = [_message_item(item_id, text)]
    return response_json(body, response_id, created_at=int(time.time()), output=output, usage=usage)


def stream_events(body: Json, number: int, chunks: Sequence[str], usage: tuple[int, int] | None) -> list[Json]:
    """The SSE events of a streamed text answer, in the API's order, numbered by ``sequence_number``.

    ``response.created``, ``response.in_progress``, ``response.output_item.added``, ``response.content_part.added``,
    one ``response.output_text.delta`` per chunk, ``response.output_text.done``, ``response.content_part.done``,
    ``response.output_item.done`` and ``response.completed`` (carrying the usage).
    """
    response_id, item_id = f"resp_loopback{number:06d}", f"msg_loopback{number:06d}"
    created_at = int(time.time())
    text = "".join(chunks)
    pending = response_json(body, response_id, created_at=created_at, output=[], usage=None)
    place = {"item_id": item_id, "output_index": 0, "content_index": 0}
    events: list[Json] = [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending},
        {"type": "response.output_item.added", "output_index": 0, "item": _message_item(item_id, None)},
        {"type": "response.content_part.added", **place, "part": _text_part("")},
        *({"type": "response.output_text.delta", **place, "delta": c, "logprobs": []} for c in chunks if c),
        {"type": "response.output_text.done", **place, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **place, "part": _text_part(text)},
        {"type": "response.output_item.done", "output_index": 0, "item": _message_item(item_id, text)},
    ]
    done = response_json(body, response_id, created_at=created_at, output=[_message_item(item_id, text)], usage=usage)
    events.append({"type": "response.completed", "response": done})
    return [{"type": event["type"], "sequence_number": n, **event} for n, event in enumerate(events)]


def sse(event: Json) -> bytes:
    """One event as the API frames it: its type as the SSE ``event`` name, then the JSON."""
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


@dataclass(frozen=True, kw_only=True)
class ResponsesShape:
    """What one scripted Responses answer holds, in output order: reasoning (its summary streamed in ``reasoning``
    pieces), text (in ``chunks``), function calls ``(call_id, name, arguments_text)`` (arguments streamed in pieces
    of ``argument_piece`` characters); ``incomplete`` cuts it (``max_output_tokens``), ``failure`` fails it after
    the text (``(code, message)``)."""

    reasoning: Sequence[str] = ()
    chunks: Sequence[str] = ()
    calls: Sequence[tuple[str, str, str]] = ()
    argument_piece: int = 5
    usage: tuple[int, int] | None = None
    usage_details: tuple[int, int] = (0, 0)
    incomplete: str | None = None
    failure: tuple[str, str] | None = None


def _wants_reasoning(body: Json) -> bool:
    """A reasoning item is answered to a request that asks for reasoning (a reasoning model's request would)."""
    return isinstance(body.get("reasoning"), dict) or "reasoning.encrypted_content" in (body.get("include") or [])


def _reasoning_item(body: Json, item_id: str, number: int, summary: str | None) -> Json:
    """A reasoning item: empty while added (``summary`` is ``None``), with its summary part and, when the request
    included it, its encrypted content once done."""
    item: Json = {"id": item_id, "type": "reasoning", "summary": []}
    if summary is not None:
        item["summary"] = [{"type": "summary_text", "text": summary}] if summary else []
        if "reasoning.encrypted_content" in (body.get("include") or []):
            item["encrypted_content"] = f"gAAAAB-loopback-encrypted-{number:06d}"
    return item


def _call_item(item_id: str, call: tuple[str, str, str], done: bool) -> Json:
    call_id, name, arguments = call
    return {
        "id": item_id,
        "type": "function_call",
        "status": "completed" if done else "in_progress",
        "arguments": arguments if done else "",
        "call_id": call_id,
        "name": name,
    }


def shaped_events(body: Json, number: int, shape: ResponsesShape) -> tuple[list[Json], Json]:
    """The SSE events of a streamed answer of ``shape``, numbered by ``sequence_number``, and its final response.

    Reasoning: ``output_item.added``, ``reasoning_summary_part.added``, ``reasoning_summary_text.delta``s and
    ``.done``, ``reasoning_summary_part.done``, ``output_item.done`` (with ``encrypted_content``). Text as in
    :func:`stream_events`. Each call: ``output_item.added``, ``function_call_arguments.delta``s and ``.done``,
    ``output_item.done``. Then ``response.completed``, ``response.incomplete`` or ``response.failed``.
    """
    response_id = f"resp_loopback{number:06d}"
    created_at = int(time.time())
    pending = response_json(body, response_id, created_at=created_at, output=[], usage=None)
    events: list[Json] = [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending},
    ]
    output: list[Json] = []
    if shape.reasoning or _wants_reasoning(body):
        item_id, index = f"rs_loopback{number:06d}", len(output)
        summary = "".join(shape.reasoning)
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": _reasoning_item(body, item_id, number, None),
            }
        )
        if summary:
            place = {"item_id": item_id, "output_index": index, "summary_index": 0}
            events.append(
                {"type": "response.reasoning_summary_part.added", **place, "part": {"type": "summary_text", "text": ""}}
            )
            events += [
                {"type": "response.reasoning_summary_text.delta", **place, "delta": piece, "obfuscation": "x"}
                for piece in shape.reasoning
                if piece
            ]
            events.append({"type": "response.reasoning_summary_text.done", **place, "text": summary})
            events.append(
                {
                    "type": "response.reasoning_summary_part.done",
                    **place,
                    "part": {"type": "summary_text", "text": summary},
                }
            )
        done_item = _reasoning_item(body, item_id, number, summary)
        events.append({"type": "response.output_item.done", "output_index": index, "item": done_item})
        output.append(done_item)
    text = "".join(shape.chunks)
    if text or not shape.calls:
        item_id, index = f"msg_loopback{number:06d}", len(output)
        place = {"item_id": item_id, "output_index": index, "content_index": 0}
        events += [
            {"type": "response.output_item.added", "output_index": index, "item": _message_item(item_id, None)},
            {"type": "response.content_part.added", **place, "part": _text_part("")},
            *({"type": "response.output_text.delta", **place, "delta": c, "logprobs": []} for c in shape.chunks if c),
            {"type": "response.output_text.done", **place, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **place, "part": _text_part(text)},
            {"type": "response.output_item.done", "output_index": index, "item": _message_item(item_id, text)},
        ]
        output.append(_message_item(item_id, text))
    for position, call in enumerate(shape.calls):
        item_id, index = f"fc_loopback{number:06d}_{position}", len(output)
        place = {"item_id": item_id, "output_index": index}
        events.append(
            {"type": "response.output_item.added", "output_index": index, "item": _call_item(item_id, call, False)}
        )
        events += [
            {"type": "response.function_call_arguments.delta", **place, "delta": piece, "obfuscation": "x"}
            for piece in pieces(call[2], shape.argument_piece)
        ]
        events.append({"type": "response.function_call_arguments.done", **place, "name": call[1], "arguments": call[2]})
        events.append(
            {"type": "response.output_item.done", "output_index": index, "item": _call_item(item_id, call, True)}
        )
        output.append(_call_item(item_id, call, True))
    if shape.failure is not None:
        code, message = shape.failure
        final = response_json(
            body,
            response_id,
            created_at=created_at,
            output=output,
            usage=None,
            status="failed",
            error={"code": code, "message": message},
        )
        events.append({"type": "response.failed", "response": final})
    else:
        status = "incomplete" if shape.incomplete else "completed"
        final = response_json(
            body,
            response_id,
            created_at=created_at,
            output=output,
            usage=shape.usage,
            status=status,
            incomplete=shape.incomplete,
            usage_details=shape.usage_details,
        )
        events.append({"type": f"response.{status}", "response": final})
    numbered = [{"type": event["type"], "sequence_number": n, **event} for n, event in enumerate(events)]
    return numbered, final


__all__ = [
    "ResponsesShape",
    "response_json",
    "shaped_events",
    "sse",
    "stream_events",
    "usage_json",
    "whole_response",
]
