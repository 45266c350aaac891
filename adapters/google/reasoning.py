"""Gemini's function call ids and thought signatures to and from the port's provider-opaque part state."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from ironhive.ports.chat import OpaqueState, ThinkingPart, ToolCallPart

PROVIDER = "google"
"""The provider name the state is stamped with; state of any other provider is never sent to Gemini."""


@dataclass(frozen=True, slots=True)
class WireCall:
    """What Gemini sent with a function call that ``ToolCallPart`` has no field of its own for.

    Attributes:
        wire_id: The id Gemini gave the call, if it gave one (the call's ``call_id`` is generated otherwise).
        signature: The call's thought signature, which must go back with the call in later requests.
    """

    wire_id: str | None
    signature: bytes | None


def call_state(wire_id: str | None, signature: bytes | None, model: str) -> OpaqueState | None:
    """The state to keep with a call ``model`` made; ``None`` when Gemini sent neither an id nor a signature."""
    if wire_id is None and signature is None:
        return None
    encoded = base64.b64encode(signature).decode("ascii") if signature is not None else None
    return OpaqueState(provider=PROVIDER, data=json.dumps({"id": wire_id, "signature": encoded}), model=model)


def text_signature_part(thoughts: str, signature: bytes, model: str) -> ThinkingPart:
    """The thinking closed by a thought signature Gemini put on a part that is not a function call (the last part of
    an answer, often an empty text part when streaming); it goes back on the answer's last text part."""
    encoded = base64.b64encode(signature).decode("ascii")
    return ThinkingPart(
        text=thoughts, opaque=OpaqueState(provider=PROVIDER, data=json.dumps({"text_signature": encoded}), model=model)
    )


def text_signature_of(part: ThinkingPart, model: str) -> bytes | None:
    """The text part's thought signature ``part`` keeps for ``model``; ``None`` for none, another model's or
    provider's, or an unreadable one."""
    state = _state(part.opaque)
    encoded = state.get("text_signature") if state is not None else None
    if not isinstance(encoded, str) or part.opaque is None or part.opaque.model not in (None, model):
        return None
    return _decode(encoded)


def wire_call_of(call: ToolCallPart, model: str) -> WireCall | None:
    """What goes back to ``model`` with ``call``: ``None`` for a call with no readable Gemini state.

    The signature goes back only to the model that issued it (another model gets the documented dummy instead); the
    wire id pairs the call with its result whichever Gemini model reads it.
    """
    state = _state(call.opaque)
    if state is None or call.opaque is None:
        return None
    wire_id, encoded = state.get("id"), state.get("signature")
    signature = _decode(encoded) if isinstance(encoded, str) and call.opaque.model in (None, model) else None
    return WireCall(wire_id=wire_id if isinstance(wire_id, str) else None, signature=signature)


def _state(opaque: OpaqueState | None) -> dict[str, object] | None:
    return opaque.json_object_for(PROVIDER) if opaque is not None else None


def _decode(encoded: str) -> bytes | None:
    try:
        return base64.b64decode(encoded, validate=True) or None
    except binascii.Error:
        return None


__all__ = ["PROVIDER", "WireCall", "call_state", "text_signature_of", "text_signature_part", "wire_call_of"]
