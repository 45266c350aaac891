"""The error of a command given words it does not take: every word named, the closest option, the help to read."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ironhive.cli.prompt_input import edit_distance
from ironhive.cli.unexpected_arguments import unexpected_arguments

OPTIONS = ["--list", "--no-list", "--revoke", "--no-revoke"]
words = st.lists(st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=12), min_size=1, max_size=3)


@given(words)
def test_every_word_is_named_and_the_help_is_pointed_at(given_words: list[str]) -> None:
    line = unexpected_arguments(["trust"], given_words, OPTIONS)
    assert all(f'"{word}"' in line for word in given_words)
    assert line.startswith("Unexpected argument") and line.endswith("See: ironhive trust --help")


@given(words)
def test_an_option_is_suggested_only_when_the_first_word_is_close_to_it(given_words: list[str]) -> None:
    line = unexpected_arguments(["trust"], given_words, OPTIONS, hint="HINT.")
    first = given_words[0].lstrip("-").lower()
    close = [
        name
        for name in ("list", "revoke")
        if edit_distance(first, name) <= (1 if min(len(first), len(name)) <= 4 else 2)
    ]
    if close:
        assert 'Did you mean "--' in line and "HINT." not in line
    else:
        assert "Did you mean" not in line and "HINT." in line
    assert "--no-" not in line.split("Did you mean")[-1]


def test_a_misspelt_option_word_gets_its_flag() -> None:
    assert 'Did you mean "--revoke"?' in unexpected_arguments(["trust"], ["revok"], OPTIONS)
    assert 'Did you mean "--list"?' in unexpected_arguments(["trust"], ["list"], OPTIONS)


def test_a_nested_command_is_named_whole() -> None:
    line = unexpected_arguments(["mcp", "list"], ["x"], [])
    assert '"ironhive mcp list" takes options only' in line and line.endswith("See: ironhive mcp list --help")
