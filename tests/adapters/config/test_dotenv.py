""".env through python-dotenv: quoting, multi-line values, ``export``, ``${VAR}`` expansion and the trust rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ironhive.adapters.config.environment import parse_dotenv
from ironhive.adapters.config.loader import load_config
from ironhive.adapters.config.trust import ProjectTrust, TrustStore

names = st.from_regex(r"[A-Z_][A-Z0-9_]{0,15}", fullmatch=True)
values = st.text(st.characters(codec="utf-8", exclude_characters="\x00\r"), max_size=40)


def single_quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def double_quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@settings(max_examples=200, deadline=None)
@given(name=names, value=values, export=st.booleans())
@example(name="KEY", value="ends with a backslash \\", export=False)
@example(name="KEY", value="it's\nmulti-line ${HOME}", export=True)
def test_a_single_quoted_value_is_read_literally_across_lines(name: str, value: str, export: bool) -> None:
    text = f"# generated\n{'export ' if export else ''}{name}={single_quoted(value)}\nAFTER=1\n"
    parsed = parse_dotenv(text, ".env", {"HOME": "/home/x"})
    assert parsed.warnings == ()
    assert parsed.values == ({name: value, "AFTER": "1"} if name != "AFTER" else {"AFTER": "1"})


@settings(max_examples=200, deadline=None)
@given(name=names, value=values.filter(lambda text: "${" not in text), export=st.booleans())
def test_a_double_quoted_value_keeps_its_text_and_newlines(name: str, value: str, export: bool) -> None:
    text = f"{'export ' if export else ''}{name}={double_quoted(value)}\n"
    parsed = parse_dotenv(text, ".env")
    assert parsed.warnings == ()
    assert parsed.values == {name: value}


@settings(max_examples=200, deadline=None)
@given(
    first=names,
    second=names,
    outside=names,
    first_value=values.filter(lambda text: "${" not in text),
    outside_value=values,
)
def test_references_expand_from_earlier_lines_first_then_from_the_given_environment(
    first: str, second: str, outside: str, first_value: str, outside_value: str
) -> None:
    if len({first, second, outside}) < 3:
        return
    text = f'{first}={double_quoted(first_value)}\n{second}="<${{{first}}}|${{{outside}}}|${{MISSING:-dflt}}>"\n'
    environ = {outside: outside_value, first: "the environment loses to the file"}
    parsed = parse_dotenv(text, ".env", environ)
    assert parsed.values[second] == f"<{first_value}|{outside_value}|dflt>"


def test_a_multi_line_double_quoted_value_and_escapes() -> None:
    text = 'KEY="-----BEGIN KEY-----\nabc\\tdef\n-----END KEY-----"\nNEXT=after # comment\n'
    parsed = parse_dotenv(text, ".env")
    assert parsed.values == {"KEY": "-----BEGIN KEY-----\nabc\tdef\n-----END KEY-----", "NEXT": "after"}


def test_single_quotes_never_expand_and_a_missing_variable_is_empty() -> None:
    parsed = parse_dotenv("A='${HOME}'\nB=${HOME}\nC=${NOPE}\n", ".env", {"HOME": "/home/u"})
    assert parsed.values == {"A": "${HOME}", "B": "/home/u", "C": ""}


def test_a_name_without_a_value_sets_nothing() -> None:
    assert parse_dotenv("LONELY\nA=1\n", ".env").values == {"A": "1"}


# -- through the loader: trust -------------------------------------------------------------------------------------


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def test_a_trusted_dotenv_expands_the_real_environment(folders: tuple[Path, Path]) -> None:
    home, project = folders
    (project / ".env").write_text('OPENAI_API_KEY=${MY_KEY}\nOPENAI_MODEL="gpt-${SIZE:-4o}"\n')
    trusted = ProjectTrust(home=home, store=TrustStore.for_home(home), trust_all=True)
    loaded = load_config(home=home, project=project, environ={"MY_KEY": "sk-from-env"}, trust=trusted)
    assert (loaded.config.openai.api_key, loaded.config.openai.model) == ("sk-from-env", "gpt-4o")


def test_an_untrusted_dotenv_cannot_copy_the_environment_into_a_value_it_may_set(folders: tuple[Path, Path]) -> None:
    home, project = folders
    (project / ".env").write_text("OPENAI_MODEL=${OPENAI_API_KEY}-${LOCAL:-x}\nLOCAL=1\nXAI_MODEL=${LOCAL}\n")
    untrusted = ProjectTrust(home=home, store=TrustStore.for_home(home))
    environ = {"OPENAI_API_KEY": "sk-real-secret", "OPENAI_MODEL": "gpt-env"}
    loaded = load_config(home=home, project=project, environ=environ, trust=untrusted)
    assert loaded.config.openai.model == "-x"  # the real environment is not visible to an untrusted file
    assert loaded.config.xai.model == "1"  # its own earlier lines are
    assert loaded.config.openai.api_key == "sk-real-secret"
