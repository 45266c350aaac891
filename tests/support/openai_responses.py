"""The OpenAI Responses API's wire shapes (a text answer, whole or as SSE events) for the loopback OpenAI server."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

Json = dict[str, Any]


def usage_json(usage: tuple[int, int] | None) -> Json | None:
    """A Responses ``usage`` object from ``(input, output)`` tokens."""
    if usage is None:
        return None
    prompt, completion = usage
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
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
    body: Json, response_id: str, *, created_at: int, output: list[Json], usage: tuple[int, int] | None
) -> Json:
    """A ``response`` object as the API returns it (in progress while ``output`` is empty)."""
    done = bool(output)
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "completed" if done else "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": str(body.get("model", "")),
        "output": output,
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": bool(body.get("store", True)),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": usage_json(usage) if done else None,
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


__all__ = ["response_json", "sse", "stream_events", "usage_json", "whole_response"]
