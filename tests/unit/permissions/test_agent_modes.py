"""Agent modes: the full transition table, invalid transitions, tool filtering and the read-only set."""

from __future__ import annotations

import itertools

import pytest

from ironhive.domain.permissions.modes import (
    TRANSITIONS,
    InvalidModeTransitionError,
    Mode,
    ModeStateMachine,
    ModeTrigger,
    is_read_only_tool,
    is_tool_offered,
    next_mode,
)

T = ModeTrigger
VALID = {
    (Mode.IDLE, T.START_PLANNING): Mode.PLANNING,
    (Mode.IDLE, T.START_WORKING): Mode.WORKING,
    (Mode.PLANNING, T.FINISH_PLANNING): Mode.WORKING,
    (Mode.PLANNING, T.RESET): Mode.IDLE,
    (Mode.WORKING, T.RISKY_OPERATION_DETECTED): Mode.HUMAN_IN_THE_LOOP,
    (Mode.WORKING, T.COMPLETE): Mode.IDLE,
    (Mode.WORKING, T.RESET): Mode.IDLE,
    (Mode.WORKING, T.REPLAN_REQUESTED): Mode.PLANNING,
    (Mode.HUMAN_IN_THE_LOOP, T.USER_APPROVED): Mode.WORKING,
    (Mode.HUMAN_IN_THE_LOOP, T.USER_REJECTED): Mode.IDLE,
    (Mode.HUMAN_IN_THE_LOOP, T.RESET): Mode.IDLE,
}


def test_transition_table_is_exactly_the_documented_one() -> None:
    assert dict(TRANSITIONS) == VALID


@pytest.mark.parametrize(("mode", "trigger"), list(itertools.product(Mode, ModeTrigger)))
def test_every_pair_either_transitions_as_documented_or_raises(mode: Mode, trigger: ModeTrigger) -> None:
    if (mode, trigger) in VALID:
        assert next_mode(mode, trigger) == VALID[(mode, trigger)]
    else:
        with pytest.raises(InvalidModeTransitionError, match=trigger.value):
            next_mode(mode, trigger)


def test_state_machine_walks_a_session_and_keeps_its_mode_on_an_invalid_trigger() -> None:
    assert ModeStateMachine().mode == Mode.IDLE
    machine = ModeStateMachine()
    assert machine.fire(T.START_PLANNING) == Mode.PLANNING
    assert machine.fire(T.FINISH_PLANNING) == Mode.WORKING
    assert machine.fire(T.RISKY_OPERATION_DETECTED) == Mode.HUMAN_IN_THE_LOOP
    assert not machine.can_fire(T.COMPLETE)
    with pytest.raises(InvalidModeTransitionError):
        machine.fire(T.COMPLETE)
    assert machine.mode == Mode.HUMAN_IN_THE_LOOP
    assert machine.fire(T.USER_APPROVED) == Mode.WORKING
    assert machine.fire(T.COMPLETE) == Mode.IDLE


@pytest.mark.parametrize(
    "name",
    [
        "ReadFile",
        "read_file",
        "READ_FILE",
        "readfile",
        "GlobFiles",
        "glob",
        "glob_files",
        "GrepFiles",
        "grep",
        "grep_files",
        "ListDirectory",
        "list_directory",
        "LIST_DIRECTORY",
    ],
)
def test_built_in_read_only_tools(name: str) -> None:
    assert is_read_only_tool(name)


@pytest.mark.parametrize(
    "name", ["write_file", "WriteFile", "edit_file", "delete_file", "execute_command", "manage_todo", "", "mcp__x__y"]
)
def test_other_tools_are_not_read_only(name: str) -> None:
    assert not is_read_only_tool(name)


def test_policy_read_only_tools_extend_the_set_as_case_insensitive_globs() -> None:
    extra = ("read_current_tab", "list_saved_*")
    assert is_read_only_tool("Read_Current_Tab", extra)
    assert is_read_only_tool("list_saved_pages", extra)
    assert not is_read_only_tool("save_page", extra)


@pytest.mark.parametrize(
    ("mode", "read_only", "other"),
    [
        (Mode.IDLE, False, False),
        (Mode.PLANNING, True, False),
        (Mode.WORKING, True, True),
        (Mode.HUMAN_IN_THE_LOOP, False, False),
    ],
)
def test_tool_filtering_by_mode(mode: Mode, read_only: bool, other: bool) -> None:
    assert is_tool_offered(mode, "read_file") is read_only
    assert is_tool_offered(mode, "write_file") is other
    assert is_tool_offered(mode, "my_tool", ("my_*",)) is read_only
