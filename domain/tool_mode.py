"""The tool mode of a request (``auto``, ``none``, ``require_any``, ``require:<tool>``) read once for every provider."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ironhive.domain.errors import ConfigurationError

REQUIRE_PREFIX = "require:"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolMode:
    """What a request allows or demands of tool calls.

    Attributes:
        kind: ``auto`` (the model decides), ``none`` (no call), ``any`` (some call) or ``tool`` (a call of ``tool``).
        tool: The required tool's name when ``kind`` is ``tool``.
    """

    kind: Literal["auto", "none", "any", "tool"]
    tool: str | None = None


def parse_tool_mode(text: str) -> ToolMode:
    """Read a tool mode.

    Raises:
        ConfigurationError: ``text`` is not one of the known forms.
    """
    match text:
        case "auto" | "none":
            return ToolMode(kind=text)
        case "require_any":
            return ToolMode(kind="any")
        case _ if text.startswith(REQUIRE_PREFIX) and text.removeprefix(REQUIRE_PREFIX).strip():
            return ToolMode(kind="tool", tool=text.removeprefix(REQUIRE_PREFIX).strip())
    raise ConfigurationError(f"unknown tool mode {text!r}; expected auto, none, require_any or require:<tool>")
