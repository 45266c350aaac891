"""Agent modes (Idle, Planning, Working, HumanInTheLoop), their transition table and the read-only tool set."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from types import MappingProxyType

from ironhive.domain.permissions.evaluator import glob_matches


class Mode(StrEnum):
    """What the agent is doing, which decides the tools it may use."""

    IDLE = "idle"
    PLANNING = "planning"
    WORKING = "working"
    HUMAN_IN_THE_LOOP = "human_in_the_loop"


class ModeTrigger(StrEnum):
    """An event that moves the agent from one mode to another."""

    START_PLANNING = "start_planning"
    FINISH_PLANNING = "finish_planning"
    START_WORKING = "start_working"
    RISKY_OPERATION_DETECTED = "risky_operation_detected"
    USER_APPROVED = "user_approved"
    USER_REJECTED = "user_rejected"
    COMPLETE = "complete"
    RESET = "reset"
    REPLAN_REQUESTED = "replan_requested"


class InvalidModeTransitionError(ValueError):
    """A trigger was fired in a mode that has no transition for it (a programming error, not a user error)."""


TRANSITIONS: Mapping[tuple[Mode, ModeTrigger], Mode] = MappingProxyType(
    {
        (Mode.IDLE, ModeTrigger.START_PLANNING): Mode.PLANNING,
        (Mode.IDLE, ModeTrigger.START_WORKING): Mode.WORKING,
        (Mode.PLANNING, ModeTrigger.FINISH_PLANNING): Mode.WORKING,
        (Mode.PLANNING, ModeTrigger.RESET): Mode.IDLE,
        (Mode.WORKING, ModeTrigger.RISKY_OPERATION_DETECTED): Mode.HUMAN_IN_THE_LOOP,
        (Mode.WORKING, ModeTrigger.COMPLETE): Mode.IDLE,
        (Mode.WORKING, ModeTrigger.RESET): Mode.IDLE,
        (Mode.WORKING, ModeTrigger.REPLAN_REQUESTED): Mode.PLANNING,
        (Mode.HUMAN_IN_THE_LOOP, ModeTrigger.USER_APPROVED): Mode.WORKING,
        (Mode.HUMAN_IN_THE_LOOP, ModeTrigger.USER_REJECTED): Mode.IDLE,
        (Mode.HUMAN_IN_THE_LOOP, ModeTrigger.RESET): Mode.IDLE,
    }
)
"""Every valid (mode, trigger) pair and the mode it leads to; any other pair is invalid."""

BUILT_IN_READ_ONLY_TOOLS: frozenset[str] = frozenset(
    {
        "readfile",
        "read_file",
        "globfiles",
        "glob",
        "glob_files",
        "grepfiles",
        "grep",
        "grep_files",
        "listdirectory",
        "list_directory",
        "load_skill",
        "advisor",
    }
)
"""Lowercased names of the built-in tools that only look (both spellings the built-ins ship under).

``load_skill`` (reads inside a skill's folder) and ``advisor`` (asks another model) change nothing either, so planning
may use them; the original ran the advisor in planning mode only when ``read_only_tools`` listed it."""


def next_mode(mode: Mode, trigger: ModeTrigger) -> Mode:
    """The mode ``trigger`` leads to from ``mode``.

    Args:
        mode: The current mode.
        trigger: The event.

    Returns:
        The next mode.

    Raises:
        InvalidModeTransitionError: ``mode`` has no transition for ``trigger``.
    """
    target = TRANSITIONS.get((mode, trigger))
    if target is None:
        raise InvalidModeTransitionError(f"Invalid mode transition: '{trigger.value}' from mode '{mode.value}'")
    return target


class ModeStateMachine:
    """Holds the current mode and moves it by the transition table."""

    def __init__(self, initial: Mode = Mode.IDLE) -> None:
        """Start in ``initial`` (Idle unless told otherwise).

        Args:
            initial: The starting mode.
        """
        self._mode = initial

    @property
    def mode(self) -> Mode:
        """The current mode."""
        return self._mode

    def can_fire(self, trigger: ModeTrigger) -> bool:
        """Tell whether ``trigger`` is valid in the current mode."""
        return (self._mode, trigger) in TRANSITIONS

    def fire(self, trigger: ModeTrigger) -> Mode:
        """Apply ``trigger`` and return the new mode.

        Raises:
            InvalidModeTransitionError: The current mode has no transition for ``trigger``; the mode is unchanged.
        """
        self._mode = next_mode(self._mode, trigger)
        return self._mode


def is_read_only_tool(name: str, extra_read_only: Iterable[str] = ()) -> bool:
    """Tell whether a tool only looks (and so may run in Planning mode).

    Args:
        name: The tool's name.
        extra_read_only: The policy's ``read_only_tools``: names or globs (``*`` matches anything), case-insensitive.

    Returns:
        Whether the tool is a built-in read-only tool or matches one of ``extra_read_only``.
    """
    if not name.strip():
        return False
    if name.lower() in BUILT_IN_READ_ONLY_TOOLS:
        return True
    return any(glob_matches(pattern, name) for pattern in extra_read_only)


def is_tool_offered(mode: Mode, name: str, extra_read_only: Iterable[str] = ()) -> bool:
    """Tell whether a mode offers a tool: Idle none, Planning read-only tools only, Working all, HumanInTheLoop none.

    Args:
        mode: The current mode.
        name: The tool's name.
        extra_read_only: The policy's ``read_only_tools``.

    Returns:
        Whether the tool is available in ``mode``.
    """
    if mode is Mode.WORKING:
        return True
    if mode is Mode.PLANNING:
        return is_read_only_tool(name, extra_read_only)
    return False
