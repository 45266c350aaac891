"""A parse that takes a prepared argument collection binds exactly what a parse that builds its own binds."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from typing import Any

import pytest
from cyclopts import CycloptsError
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.cli import prepared_parse
from ironhive.cli.app import app, run_app
from ironhive.daemon.preload import PARSE_SAMPLES, prepare_parse

TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12).filter(lambda text: not text.startswith("-"))
FLAGS = ("--plain", "--no-stream", "--show-tokens", "--show-thinking", "--plan", "--dry-run", "-c", "--fork")


@st.composite
def default_command_lines(draw: st.DrawFn) -> list[str]:
    tokens = ["-p", draw(TEXT)]
    if draw(st.booleans()):
        tokens += ["-o", draw(st.sampled_from(["text", "json", "jsonl", "yaml"]))]  # yaml: a usage error
    if draw(st.booleans()):
        tokens += ["-m", draw(TEXT)]
    tokens += draw(st.lists(st.sampled_from(FLAGS), max_size=3, unique=True))
    return draw(st.permutations(tokens)) if draw(st.booleans()) else tokens


@st.composite
def run_command_lines(draw: st.DrawFn) -> list[str]:
    tokens = ["run", draw(TEXT)] if draw(st.booleans()) else ["run", "-p", draw(TEXT)]
    tokens += draw(st.lists(st.sampled_from(["--json", "--show-tokens", "--auto-commit"]), max_size=2, unique=True))
    if draw(st.booleans()):
        tokens += ["--approval-timeout", draw(st.sampled_from(["5", "2.5", "soon"]))]  # soon: a usage error
    return tokens


@pytest.fixture(autouse=True)
def nothing_prepared() -> Iterator[None]:
    prepared_parse.discard()
    yield
    prepared_parse.discard()


def parse(tokens: list[str]) -> tuple[str, dict[str, Any]] | str:
    """What the parse binds (the command and its arguments), or the usage error's type."""
    try:
        command, bound, _ = app.parse_args(list(tokens), exit_on_error=False, print_error=False)
    except CycloptsError as error:
        return type(error).__name__
    assert isinstance(bound, inspect.BoundArguments)
    return command.__name__, dict(bound.arguments)


@settings(max_examples=60, deadline=None)
@given(st.one_of(default_command_lines(), run_command_lines()))
def test_a_prepared_parse_binds_what_a_fresh_one_binds(tokens: list[str]) -> None:
    fresh = parse(tokens)
    assert prepare_parse_count() == len(PARSE_SAMPLES)
    assert parse(tokens) == fresh  # takes the prepared collection of its command
    assert parse(tokens) == fresh  # the prepared one is used once: this parse builds its own


def prepare_parse_count() -> int:
    prepare_parse()
    return len(prepared_parse._prepared)


def test_each_prepared_collection_is_taken_once_and_only_by_its_command() -> None:
    prepare_parse()
    assert len(prepared_parse._prepared) == 2
    assert parse(["models", "--help"]) != "UnknownCommandError"  # another command takes none of them
    assert len(prepared_parse._prepared) == 2
    assert parse(["-p", "hi"]) == parse(["-p", "hi"])
    assert len(prepared_parse._prepared) == 1
    assert parse(["run", "-p", "hi"])[0] == "run"
    assert prepared_parse._prepared == {}


def test_preparing_again_leaves_one_unused_collection_per_command() -> None:
    prepare_parse()
    first = dict(prepared_parse._prepared)
    prepare_parse()  # it uses the unused ones (as a parse would) and keeps new ones
    assert prepared_parse._prepared.keys() == first.keys()
    assert all(prepared_parse._prepared[key] is not first[key] for key in first)


def test_a_run_in_this_process_prepares_nothing(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", os.fspath(tmp_path))
    assert run_app(["--help"]) == 0
    assert run_app(["-o", "yaml", "-p", "hi"]) == 2
    assert prepared_parse._prepared == {}


def test_the_commands_annotations_are_values_so_a_parse_evaluates_no_text() -> None:
    from ironhive.cli.app import chat, run

    for command in (chat, run):
        assert command.__annotations__
        assert not any(isinstance(annotation, str) for annotation in command.__annotations__.values())


PARSE_ORDER = """
import sys
import cyclopts.argument._argument as argument
from ironhive.cli.app import app

checked = []
validate = argument.Argument.validate
def recording(self, value):
    checked.append("pydantic" in sys.modules)
    return validate(self, value)
argument.Argument.validate = recording
assert "pydantic" not in sys.modules
app.parse_args(sys.argv[1:], exit_on_error=False, print_error=False)
print(len(checked), any(checked), "dependency_injector.containers" in sys.modules)
"""


@pytest.mark.parametrize(
    ("args", "imported"),
    [(["-p", "hi", "-o", "json", "-m", "gpt-test"], True), (["run", "hi", "--json"], True), (["--help"], False)],
)
def test_a_command_line_is_parsed_before_pydantic_is_imported(args: list[str], imported: bool) -> None:
    """cyclopts would check each value with a pydantic TypeAdapter if pydantic were imported (about 40 ms)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", PARSE_ORDER, *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    count, with_pydantic, dependency_injector = done.stdout.split()
    assert (int(count) > 0 or not imported, with_pydantic) == (True, "False")
    assert dependency_injector == str(imported)  # imported after the parse, unless help needs nothing of it
