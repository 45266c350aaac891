"""Length-prefixed JSON frames: the wire between LlamaCppChatClient and its llama.cpp worker process."""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import IO, Any, Final

_HEADER: Final = struct.Struct(">I")
MAX_FRAME_BYTES: Final = 64 * 1024 * 1024
"""The largest frame either side accepts (a frame is one small JSON object; this only bounds a garbled length)."""


class FrameError(Exception):
    """The stream does not hold a well-formed frame (a garbled length, a cut-off body or a body that is not JSON)."""


def encode_frame(payload: Mapping[str, object]) -> bytes:
    """``payload`` as one frame: a 4-byte big-endian length, then the compact UTF-8 JSON of the object."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {len(body)} bytes is over the limit")
    return _HEADER.pack(len(body)) + body


def write_frame(stream: IO[bytes], payload: Mapping[str, object]) -> None:
    """Write one frame and flush it (the other side waits for it)."""
    stream.write(encode_frame(payload))
    stream.flush()


def read_frame(stream: IO[bytes]) -> dict[str, Any] | None:
    """Read the next frame; ``None`` at a clean end of the stream (between frames).

    Raises:
        FrameError: The stream ended inside a frame or the frame is malformed.
    """
    header = _read_exactly(stream, _HEADER.size)
    if not header:
        return None
    if len(header) < _HEADER.size:
        raise FrameError("stream ended inside a frame header")
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise FrameError(f"frame length {length} is over the limit")
    body = _read_exactly(stream, length)
    if len(body) < length:
        raise FrameError("stream ended inside a frame")
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise FrameError(f"frame is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise FrameError("frame is not a JSON object")
    return payload


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
