"""``set``/``get``/``unset`` on the global file: key normalisation, value typing, masking, file modes, atomicity."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from ironhive.adapters.config.files import global_config_path
from ironhive.adapters.config.loader import load_config
from ironhive.adapters.config.writer import (
    display_value,
    flatten,
    get_value,
    is_known_key,
    normalize_key,
    parse_value,
    set_value,
    unset_value,
    value_problem,
)
from ironhive.domain.errors import ConfigurationError


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def stored(home: Path) -> Any:
    return yaml.safe_load(global_config_path(home).read_text())


@pytest.mark.parametrize(
    ("typed", "normalised"),
    [
        ("openai.apiKey", "openai.apiKey"),
        ("openai.api_key", "openai.apiKey"),
        ("OpenAI.ApiKey", "openai.apiKey"),
        ("OPENAI.API_KEY", "openai.apiKey"),
        ("GoogleAI.Model", "googleai.model"),
        ("AzureOpenAI.DeploymentName", "azureopenai.deploymentName"),
        ("gpustack.embedding_model", "gpuStack.embeddingModel"),
        ("GpuStack.Endpoint", "gpuStack.endpoint"),
        ("web_search.tavily_api_key", "webSearch.tavilyApiKey"),
        ("compaction.goal_reminder.min_messages", "compaction.goalReminder.minMessages"),
        ("Providers.MaxRetries", "providers.maxRetries"),
        ("permissions.external_directory", "permissions.externalDirectory"),
        ("Custom.SomeKey", "custom.someKey"),
        ("custom.some_long_key", "custom.someLongKey"),
    ],
)
def test_key_normalisation(typed: str, normalised: str) -> None:
    assert normalize_key(typed) == normalised


@pytest.mark.parametrize("key", ["", "openai.", ".model", "openai..model", "  "])
def test_malformed_keys_are_refused(key: str) -> None:
    with pytest.raises(ConfigurationError, match="Invalid key"):
        normalize_key(key)


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("ollama.enabled", "true", True),
        ("ollama.enabled", "False", False),
        ("compaction.maxContextTokens", "65536", 65536),
        ("compaction.maxContextTokens", "-3", -3),
        ("compaction.targetRatio", "0.5", 0.5),
        ("compaction.targetRatio", "1e-1", 0.1),
        ("custom.thing", "hello world", "hello world"),
        ("custom.thing", "007", 7),
        ("custom.thing", "true", True),
        ("custom.thing", "1.2.3", "1.2.3"),
        ("custom.thing", "nan", "nan"),
        ("openai.model", "4", "4"),  # a text key keeps the text as typed
        ("openai.apiKey", "00123", "00123"),
        ("openai.apiKey", "true", "true"),
        ("skills.roots", "~/skills, .ironhive/skills", ["~/skills", ".ironhive/skills"]),
        ("skills.roots", "[a, 'b, c']", ["a", "b, c"]),
    ],
)
def test_value_typing(key: str, raw: str, expected: Any) -> None:
    value = parse_value(key, raw)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("openai.apiKey", "sk-abcdefghijklmnop", "***mnop"),
        ("webSearch.tavilyApiKey", "tvly-123456789", "***789"),
        ("x.clientSecret", "s3cr3t", "***t"),
        ("x.password", "abc", "***"),
        ("x.accessToken", "tok-123456789", "***789"),
        ("compaction.maxContextTokens", 65536, "65536"),
        ("openai.model", "gpt-4o-mini-long-name", "gpt-4o-mini-long-name"),
        ("ollama.enabled", True, "true"),
        ("skills.roots", ["a", "b"], '["a", "b"]'),
        ("openai.apiKey", None, "null"),
    ],
)
def test_display_masks_only_secrets(key: str, value: Any, shown: str) -> None:
    assert display_value(key, value) == shown
    assert display_value(key, value, raw=True) == display_value("plain.key", value)


def test_set_creates_the_file_and_directory_owner_only(home: Path) -> None:
    assert set_value(home, "OpenAI.API_KEY", "sk-abcdefghijklmnop") == ("openai.apiKey", "sk-abcdefghijklmnop")
    path = global_config_path(home)
    assert stored(home) == {"openai": {"apiKey": "sk-abcdefghijklmnop"}}
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_set_keeps_a_file_owner_only_when_it_was_readable_by_others(home: Path) -> None:
    path = global_config_path(home)
    path.parent.mkdir()
    path.write_text("openai:\n  model: a\n")
    path.chmod(0o644)
    set_value(home, "openai.apiKey", "sk-abcdefghijklmnop")
    assert path.stat().st_mode & 0o777 == 0o600


def test_set_get_unset_round_trip(home: Path) -> None:
    set_value(home, "openai.model", "gpt-4o-mini")
    set_value(home, "compaction.targetRatio", "0.6")
    set_value(home, "ollama.enabled", "true")
    set_value(home, "compaction.goalReminder.enabled", "false")
    assert stored(home) == {
        "openai": {"model": "gpt-4o-mini"},
        "compaction": {"targetRatio": 0.6, "goalReminder": {"enabled": False}},
        "ollama": {"enabled": True},
    }
    assert get_value(home, "OpenAI.Model") == ("openai.model", "gpt-4o-mini")
    assert get_value(home, "compaction.target_ratio") == ("compaction.targetRatio", 0.6)
    assert get_value(home, "compaction") == (
        "compaction",
        {"targetRatio": 0.6, "goalReminder": {"enabled": False}},
    )
    assert unset_value(home, "compaction.goalReminder.enabled") == ("compaction.goalReminder.enabled", True)
    assert stored(home) == {
        "openai": {"model": "gpt-4o-mini"},
        "compaction": {"targetRatio": 0.6},
        "ollama": {"enabled": True},
    }
    unset_value(home, "compaction.targetRatio")
    assert stored(home) == {"openai": {"model": "gpt-4o-mini"}, "ollama": {"enabled": True}}
    with pytest.raises(KeyError):
        get_value(home, "compaction.targetRatio")


def test_values_written_by_set_load_with_the_right_types(home: Path, tmp_path: Path) -> None:
    set_value(home, "lmsupply.enabled", "false")
    set_value(home, "lmsupply.maxContextLength", "8192")
    set_value(home, "providers.initialBackoffSeconds", "2")
    set_value(home, "providers.chain", "openai, anthropic")
    set_value(home, "openai.apiKey", "1234567890")
    loaded = load_config(home=home, project=tmp_path, environ={})
    assert loaded.warnings == ()
    config = loaded.config
    assert config.lmsupply.enabled is False
    assert config.lmsupply.max_context_length == 8192
    assert config.providers.initial_backoff_seconds == 2.0
    assert config.providers.chain == ["openai", "anthropic"]
    assert config.openai.api_key == "1234567890"


def test_set_overwrites_a_value_and_keeps_the_rest(home: Path) -> None:
    path = global_config_path(home)
    path.parent.mkdir()
    path.write_text("# my settings\nanthropic:\n  model: claude\nopenai:\n  model: old\n")
    set_value(home, "openai.model", "new")
    assert stored(home) == {"anthropic": {"model": "claude"}, "openai": {"model": "new"}}


def test_set_under_a_section_that_is_null_in_the_file(home: Path) -> None:
    path = global_config_path(home)
    path.parent.mkdir()
    path.write_text("openai:\n")
    set_value(home, "openai.model", "m")
    assert stored(home) == {"openai": {"model": "m"}}


def test_set_below_a_plain_value_is_refused_and_the_file_unchanged(home: Path) -> None:
    set_value(home, "custom", "text")
    before = global_config_path(home).read_text()
    with pytest.raises(ConfigurationError, match="'custom' holds a value, not a section"):
        set_value(home, "custom.inner", "x")
    assert global_config_path(home).read_text() == before


def test_a_malformed_global_file_is_never_overwritten(home: Path) -> None:
    path = global_config_path(home)
    path.parent.mkdir()
    path.write_text("openai: [unclosed\n")
    for action in (lambda: set_value(home, "openai.model", "x"), lambda: unset_value(home, "openai")):
        with pytest.raises(ConfigurationError, match="Malformed YAML"):
            action()
    assert path.read_text() == "openai: [unclosed\n"


def test_writes_leave_no_temporary_files(home: Path) -> None:
    set_value(home, "openai.model", "a")
    set_value(home, "openai.model", "b")
    unset_value(home, "openai.model")
    assert sorted(p.name for p in global_config_path(home).parent.iterdir()) == ["config.yaml"]


def test_unset_of_a_missing_key_changes_nothing(home: Path) -> None:
    assert unset_value(home, "openai.model") == ("openai.model", False)
    assert not global_config_path(home).exists()
    set_value(home, "openai.model", "a")
    mtime = os.stat(global_config_path(home)).st_mtime_ns
    assert unset_value(home, "openai.model.deeper") == ("openai.model.deeper", False)
    assert unset_value(home, "anthropic.model") == ("anthropic.model", False)
    assert os.stat(global_config_path(home)).st_mtime_ns == mtime


def test_get_of_a_missing_key_raises_key_error(home: Path) -> None:
    with pytest.raises(KeyError):
        get_value(home, "openai.model")
    set_value(home, "openai.model", "a")
    with pytest.raises(KeyError):
        get_value(home, "openai.model.deeper")


def test_flatten() -> None:
    tree = {"openai": {"apiKey": "k", "model": "m"}, "skills": {"roots": ["a"]}, "empty": {}, "flag": True}
    assert flatten(tree) == {
        "openai.apiKey": "k",
        "openai.model": "m",
        "skills.roots": ["a"],
        "empty": {},
        "flag": True,
    }
    assert flatten({"apiKey": "k"}, "openai") == {"openai.apiKey": "k"}


@pytest.mark.parametrize(
    ("key", "known"),
    [
        ("openai.apiKey", True),
        ("compaction.goalReminder.enabled", True),
        ("permissions.bash", True),
        ("openai.x", False),
    ],
)
def test_known_keys(key: str, known: bool) -> None:
    assert is_known_key(key) is known


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("ollama.enabled", True, None),
        ("ollama.enabled", "maybe", "Input should be a valid boolean"),
        ("compaction.targetRatio", 1.5, "Input should be less than or equal to 1"),
        ("compaction", 5, "Input should be a valid dictionary or instance of CompactionSection"),
        ("custom.anything", "x", None),
        ("permissions.bash", "not a list", None),
    ],
)
def test_value_problem(key: str, value: Any, problem: str | None) -> None:
    assert value_problem(key, value) == problem
