"""Anthropic's signed and redacted thinking blocks to and from the port's provider-opaque ``ThinkingPart`` state."""

from __future__ import annotations

import json

from anthropic.types import RedactedThinkingBlockParam, ThinkingBlockParam

from ironhive.ports.chat import OpaqueState, ThinkingPart

PROVIDER = "anthropic"
"""The provider name the state is stamped with; state of any other provider is never sent to Anthropic."""

SignedThinking = ThinkingBlockParam | RedactedThinkingBlockParam
"""A thinking block as the API returned it, signature (or encrypted data) intact, ready to be sent back."""


def signed_part(thinking: str, signature: str) -> ThinkingPart:
    """A thinking block's part; the signature covers exactly ``thinking`` (which may be empty when omitted)."""
    return ThinkingPart(text=thinking, opaque=OpaqueState(provider=PROVIDER, data=json.dumps({"signature": signature})))


def redacted_part(data: str) -> ThinkingPart:
    """A redacted thinking block's part: no readable text, only the encrypted data the API must get back."""
    return ThinkingPart(text="", opaque=OpaqueState(provider=PROVIDER, data=json.dumps({"redacted": data})))


def block_of(part: ThinkingPart) -> SignedThinking | None:
    """The block to send back for ``part``; ``None`` when it carries no Anthropic state (unsigned, another
    provider's, or unreadable), since the API accepts thinking only with the signature it issued."""
    state = part.opaque.json_object_for(PROVIDER) if part.opaque is not None else None
    if state is None:
        return None
    signature, redacted = state.get("signature"), state.get("redacted")
    if isinstance(signature, str) and signature:
        return {"type": "thinking", "thinking": part.text, "signature": signature}
    if isinstance(redacted, str) and redacted:
        return {"type": "redacted_thinking", "data": redacted}
    return None


__all__ = ["PROVIDER", "SignedThinking", "block_of", "redacted_part", "signed_part"]
