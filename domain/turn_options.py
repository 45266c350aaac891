"""Validates a turn's options (tool names, tool mode, reasoning effort) against the agent and builds its override."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast, get_args

from ironhive.domain.errors import TurnOptionsError
from ironhive.ports.chat import ChatOptions, ReasoningEffort, ToolSpec

REASONING_EFFORTS: tuple[str, ...] = get_args(ReasoningEffort)
FIXED_TOOL_MODES = ("auto", "none", "require_any")


def turn_override(
    registered: Sequence[ToolSpec],
    *,
    tool_names: Sequence[str] | None = None,
    tool_mode: str | None = None,
    reasoning_effort: str | None = None,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
) -> ChatOptions:
    """The option override of one turn; unset fields stay ``None`` so the configured values apply.

    Args:
        registered: The agent's registered tools.
        tool_names: The tools offered this turn (exact, case-sensitive names; duplicates dropped, first order kept;
            ``[]`` offers none).
        tool_mode: ``auto``, ``none``, ``require_any`` or ``require:<registered tool>``.
        reasoning_effort: ``none``, ``low``, ``medium``, ``high`` or ``extra_high``.
        temperature: Passed through.
        max_output_tokens: Passed through.

    Returns:
        The override to merge onto the configured options.

    Raises:
        TurnOptionsError: An unknown tool name, tool mode or reasoning effort, a tool mode that contradicts the tools
            offered (``require:<tool>`` for a tool not among ``tool_names``, ``require_any`` with no tool offered), or
            a ``max_output_tokens`` below 1 (nothing is silently dropped).
    """
    by_name = {spec.name: spec for spec in registered}
    tools: tuple[ToolSpec, ...] | None = None
    if tool_names is not None:
        unique = list(dict.fromkeys(tool_names))
        unknown = [name for name in unique if name not in by_name]
        if unknown:
            raise TurnOptionsError(
                "Turn options name tool(s) that are not registered on this agent: "
                f"{', '.join(unknown)}. Registered tools: {', '.join(by_name) or '(none)'}"
            )
        tools = tuple(by_name[name] for name in unique)
    if tool_mode is not None and not (
        tool_mode in FIXED_TOOL_MODES or (tool_mode.startswith("require:") and tool_mode[len("require:") :] in by_name)
    ):
        raise TurnOptionsError(
            f"Unknown tool mode '{tool_mode}'. Expected auto, none, require_any or require:<tool name>."
        )
    offered = [spec.name for spec in (tools if tools is not None else registered)]
    if tool_mode is not None and tool_mode.startswith("require:") and tool_mode[len("require:") :] not in offered:
        raise TurnOptionsError(
            f"Tool mode '{tool_mode}' requires a tool this turn does not offer: tool_names are "
            f"{', '.join(offered) or '(none)'}. Add it to tool_names or choose another mode."
        )
    if tool_mode == "require_any" and not offered:
        raise TurnOptionsError("Tool mode 'require_any' requires a tool, but this turn offers none.")
    if max_output_tokens is not None and max_output_tokens < 1:
        raise TurnOptionsError(f"max_output_tokens must be at least 1, got {max_output_tokens}.")
    if reasoning_effort is not None and reasoning_effort not in REASONING_EFFORTS:
        raise TurnOptionsError(
            f"Unknown reasoning effort '{reasoning_effort}'. Expected none, low, medium, high or extra_high."
        )
    return ChatOptions(
        tools=tools,
        tool_mode=tool_mode,
        reasoning_effort=cast(ReasoningEffort | None, reasoning_effort),
        temperature=temperature,
        max_output_tokens=max_output_tokens,
    )
