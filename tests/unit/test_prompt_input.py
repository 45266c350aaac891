"""The prompt input rules: the ``<stdin>`` block, positional prompt versus mistyped command, reading stdin."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ironhive.cli.prompt_input import (
    PromptInputError,
    close_command,
    edit_distance,
    one_shot_prompt,
    positional_prompt,
    read_stdin,
    with_stdin,
)

COMMANDS = ["run", "set", "get", "unset", "config", "mcp", "models", "sessions", "trust", "doctor", "update"]
LETTERS = st.sampled_from("abcdefghijklmnopqrstuvwxyz")


@given(prompt=st.text(min_size=1), piped=st.text())
def test_stdin_is_one_block_after_the_prompt_and_loses_nothing_but_trailing_newlines(prompt: str, piped: str) -> None:
    combined = with_stdin(prompt, piped)
    if not piped.strip():
        assert combined == prompt
        return
    head = f"{prompt}\n\n<stdin>\n"
    assert combined.startswith(head) and combined.endswith("\n</stdin>")
    assert combined[len(head) : -len("\n</stdin>")] == piped.rstrip("\r\n")


@given(st.text(min_size=1).filter(lambda text: any(character.isspace() for character in text)))
def test_a_sentence_is_always_a_prompt(sentence: str) -> None:
    assert positional_prompt([sentence], COMMANDS) == sentence


@st.composite
def one_slip(draw: st.DrawFn) -> tuple[str, str]:
    """A command name and the name with one letter wrong, missing, added or swapped with its neighbour."""
    name = draw(st.sampled_from(COMMANDS))
    index = draw(st.integers(0, len(name) - 1))
    kind = draw(st.sampled_from(["substitute", "delete", "insert", "swap"]))
    if kind == "substitute":
        typo = name[:index] + draw(LETTERS) + name[index + 1 :]
    elif kind == "delete":
        typo = name[:index] + name[index + 1 :]
    elif kind == "insert":
        typo = name[:index] + draw(LETTERS) + name[index:]
    else:
        assume(index + 1 < len(name))
        typo = name[:index] + name[index + 1] + name[index] + name[index + 2 :]
    return name, typo


@given(one_slip(), st.lists(st.text(min_size=1), max_size=2))
def test_one_slip_in_a_command_name_is_an_error_with_a_suggestion(slip: tuple[str, str], rest: list[str]) -> None:
    name, typo = slip
    assume(typo not in COMMANDS and len(typo) >= 2)
    with pytest.raises(PromptInputError) as raised:
        positional_prompt([typo, *rest], COMMANDS)
    assert raised.value.code == 2
    suggested = close_command(typo, COMMANDS)
    assert suggested is not None and edit_distance(typo, suggested) <= edit_distance(typo, name) == 1
    assert f'Did you mean "{suggested}"?' in str(raised.value)


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12))
def test_a_word_far_from_every_command_is_a_prompt_alone_and_an_error_with_more_words(word: str) -> None:
    assume(all(edit_distance(word, name) > 2 for name in COMMANDS))
    assert positional_prompt([word], COMMANDS) == word
    with pytest.raises(PromptInputError) as raised:
        positional_prompt([word, "more"], COMMANDS)
    assert raised.value.code == 2 and f"quote it: ironhive '{word} more'" in str(raised.value)


@given(st.text(max_size=8), st.text(max_size=8))
def test_edit_distance_is_symmetric_and_zero_only_for_equal_words(first: str, second: str) -> None:
    assert edit_distance(first, second) == edit_distance(second, first)
    assert (edit_distance(first, second) == 0) == (first == second)
    assert edit_distance(first + "ab", first + "ba") <= 1


@pytest.fixture
def pipe() -> Iterator[tuple[io.TextIOWrapper, int]]:
    """A reader (as stdin) and the descriptor of its still-open writing end."""
    read_end, write_end = os.pipe()
    reader = io.TextIOWrapper(io.BufferedReader(io.FileIO(read_end, "rb")), encoding="utf-8")
    try:
        yield reader, write_end
    finally:
        reader.close()
        with contextlib.suppress(OSError):
            os.close(write_end)


def test_a_silent_open_stdin_is_left_after_the_wait(pipe: tuple[io.TextIOWrapper, int]) -> None:
    reader, _ = pipe
    assert read_stdin(reader, wait_seconds=0.05) is None


def test_piped_text_is_read_to_its_end(pipe: tuple[io.TextIOWrapper, int]) -> None:
    reader, write_end = pipe
    os.write(write_end, b"first\n")
    os.write(write_end, b"second\n")
    os.close(write_end)
    assert one_shot_prompt("sum up", reader) == "sum up\n\n<stdin>\nfirst\nsecond\n</stdin>"


def test_stdin_that_is_not_text_raises_with_the_offset(pipe: tuple[io.TextIOWrapper, int]) -> None:
    reader, write_end = pipe
    os.write(write_end, b"ok \xff")
    os.close(write_end)
    with pytest.raises(PromptInputError, match=r"not utf-8 text \(byte 0xff at offset 3\)") as raised:
        one_shot_prompt(None, reader)
    assert raised.value.code == 1


def test_a_closed_stdin_is_no_input() -> None:
    assert read_stdin(None, wait_seconds=None) == ""
