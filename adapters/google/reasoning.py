"""Gemini's function call ids and thought signatures to and from the port's provider-opaque part state."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from ironhive.ports.chat import OpaqueState, ToolCallPart

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


def wire_call_of(call: ToolCallPart, model: str) -> WireCall | None:
    """What goes back to ``model`` with ``call``: ``None`` for a call with no readable Gemini state.

    The signature goes back only to the model that issued it (another model gets the documented dummy instead); the
    wire id pairs the call with its result whichever Gemini model reads it.
    """
    opaque = call.opaque
    if opaque is None or opaque.provider != PROVIDER:
        return None
    try:
        state = json.loads(opaque.data)
    except json.JSONDecodeError:
        return None
    if not isinstance(state, dict):
        return None
    wire_id, encoded = state.get("id"), state.get("signature")
    signature: bytes | None = None
    if isinstance(encoded, str) and opaque.model in (None, model):
        try:
            signature = base64.b64decode(encoded, validate=True) or None
        except binascii.Error:
            signature = None
    return WireCall(wire_id=wire_id if isinstance(wire_id, str) else None, signature=signature)


__all__ = ["PROVIDER", "WireCall", "call_state", "wire_call_of"]
