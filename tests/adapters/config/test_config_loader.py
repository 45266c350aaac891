"""Layered config loading: precedence, tree overlay, unknown keys, malformed files, bad values, env, migration."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from ironhive.adapters.config.files import global_config_path, legacy_settings_path, project_config_path
from ironhive.adapters.config.loader import LoadedConfig, load_config, overlay
from ironhive.adapters.config.trust import ProjectTrust, TrustStore
from ironhive.adapters.permissions.loader import policy_from_config_section
from ironhive.domain.errors import ConfigurationError

LAYERS = ("global", "project", "environment", "dotenv")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def write_yaml(path: Path, document: Mapping[Any, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(dict(document), sort_keys=False))
    return path


def load(home: Path, project: Path, environ: Mapping[str, str] | None = None) -> LoadedConfig:
    # These tests are about layering, so the project's files are trusted (test_project_trust.py covers untrusted ones).
    trusted = ProjectTrust(home=home, store=TrustStore.for_home(home), trust_all=True)
    return load_config(home=home, project=project, environ=environ or {}, trust=trusted)


class Layers:
    """Builds the four layers of one test: YAML trees for the files, variables for the environment and .env."""

    def __init__(self, home: Path, project: Path) -> None:
        self.home, self.project = home, project
        self.trees: dict[str, dict[str, Any]] = {"global": {}, "project": {}}
        self.environ: dict[str, str] = {}
        self.dotenv: dict[str, str] = {}

    def put(self, layer: str, path: str, variable: str | None, value: Any) -> None:
        if layer in self.trees:
            section, key = path.split(".")
            self.trees[layer].setdefault(section, {})[key] = value
            return
        assert variable is not None, f"{path} has no environment variable"
        text = str(value).lower() if isinstance(value, bool) else str(value)
        (self.environ if layer == "environment" else self.dotenv)[variable] = text

    def load(self) -> LoadedConfig:
        if self.trees["global"]:
            write_yaml(global_config_path(self.home), self.trees["global"])
        if self.trees["project"]:
            write_yaml(project_config_path(self.project), self.trees["project"])
        if self.dotenv:
            (self.project / ".env").write_text("".join(f"{name}={value}\n" for name, value in self.dotenv.items()))
        return load(self.home, self.project, self.environ)


def dig(loaded: LoadedConfig, path: str) -> Any:
    section, key = path.split(".")
    return loaded.config.model_dump(by_alias=True)[section][key]


ORDERED_PAIRS = [(earlier, later) for i, earlier in enumerate(LAYERS) for later in LAYERS[i + 1 :]]
FILE_PAIRS = [("global", "project")]


@pytest.mark.parametrize(("earlier", "later"), ORDERED_PAIRS, ids=[f"{a}<{b}" for a, b in ORDERED_PAIRS])
@pytest.mark.parametrize(
    ("path", "variable", "first", "second"),
    [
        ("openai.model", "OPENAI_MODEL", "model-early", "model-late"),
        ("ollama.enabled", "OLLAMA_ENABLED", True, False),
        ("lmsupply.enabled", "LMSUPPLY_ENABLED", False, True),
    ],
    ids=["string", "bool-true-then-false", "bool-false-then-true"],
)
def test_a_later_layer_wins(
    home: Path, project: Path, earlier: str, later: str, path: str, variable: str, first: Any, second: Any
) -> None:
    layers = Layers(home, project)
    layers.put(earlier, path, variable, first)
    layers.put(later, path, variable, second)
    loaded = layers.load()
    assert dig(loaded, path) == second
    assert loaded.warnings == ()


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize(
    ("path", "variable", "value"),
    [("openai.model", "OPENAI_MODEL", "gpt-x"), ("ollama.enabled", "OLLAMA_ENABLED", True)],
    ids=["string", "bool"],
)
def test_each_layer_alone_sets_a_key(
    home: Path, project: Path, layer: str, path: str, variable: str, value: Any
) -> None:
    layers = Layers(home, project)
    layers.put(layer, path, variable, value)
    assert dig(layers.load(), path) == value


@pytest.mark.parametrize(
    ("path", "first", "second"),
    [("compaction.maxContextTokens", 65536, 8192), ("compaction.targetRatio", 0.5, 0.8)],
    ids=["integer", "float"],
)
def test_numbers_follow_the_file_order(home: Path, project: Path, path: str, first: Any, second: Any) -> None:
    layers = Layers(home, project)
    layers.put("global", path, None, first)
    layers.put("project", path, None, second)
    assert dig(layers.load(), path) == second


@pytest.mark.parametrize("later", ["project", "environment", "dotenv"])
def test_a_key_omitted_by_a_later_layer_keeps_the_earlier_value(home: Path, project: Path, later: str) -> None:
    layers = Layers(home, project)
    layers.put("global", "lmsupply.enabled", None, False)
    layers.put("global", "openai.model", None, "gpt-global")
    layers.put("global", "compaction.protectRecentTokens", None, 1234)
    layers.put(later, "openai.apiKey", "OPENAI_API_KEY", "sk-later-layer")  # same section, other key
    if later == "project":
        layers.put("project", "lmsupply.embedderModel", None, "bge")
        layers.put("project", "compaction.targetRatio", None, 0.5)
    loaded = layers.load()
    assert loaded.config.lmsupply.enabled is False
    assert loaded.config.openai.model == "gpt-global"
    assert loaded.config.openai.api_key == "sk-later-layer"
    assert loaded.config.compaction.protect_recent_tokens == 1234


def test_defaults_without_any_layer(home: Path, project: Path) -> None:
    loaded = load(home, project)
    assert loaded.warnings == () and loaded.sources == () and loaded.notices == ()
    assert loaded.config.lmsupply.enabled is True
    assert loaded.config.openai.endpoint == "https://api.openai.com/v1"
    assert loaded.config.permissions is None


def test_sources_name_the_files_read(home: Path, project: Path) -> None:
    global_file = write_yaml(global_config_path(home), {"openai": {"model": "a"}})
    project_file = write_yaml(project_config_path(project), {"openai": {"model": "b"}})
    (project / ".env").write_text("OPENAI_MODEL=c\n")
    assert load(home, project).sources == (global_file, project_file, project / ".env")


def test_the_project_file_is_read_once_when_the_project_is_home(home: Path) -> None:
    write_yaml(global_config_path(home), {"bogus": 1})
    loaded = load(home, home)
    assert loaded.sources == (global_config_path(home),)
    assert len(loaded.warnings) == 1


def test_a_null_value_does_not_override(home: Path, project: Path) -> None:
    write_yaml(global_config_path(home), {"openai": {"model": "gpt-global"}, "compaction": {"maxContextTokens": 4096}})
    write_yaml(project_config_path(project), "openai:\n  model: null\ncompaction:\n  maxContextTokens:\nskills:\n")
    loaded = load(home, project)
    assert loaded.config.openai.model == "gpt-global"
    assert loaded.config.compaction.max_context_tokens == 4096
    assert loaded.warnings == ()


def test_lists_are_replaced_not_concatenated(home: Path, project: Path) -> None:
    write_yaml(global_config_path(home), {"skills": {"roots": ["a", "b"], "maxMetadataCharacters": 5}})
    write_yaml(project_config_path(project), {"skills": {"roots": ["c"]}})
    skills = load(home, project).config.skills
    assert skills.roots == ["c"]
    assert skills.max_metadata_characters == 5


def test_a_present_permissions_section_replaces_the_earlier_one_whole(home: Path, project: Path) -> None:
    rule = {"pattern": "**", "action": "allow"}
    write_yaml(global_config_path(home), {"permissions": {"read": [rule], "defaultAction": "deny"}})
    write_yaml(project_config_path(project), {"permissions": {"bash": [{"pattern": "git *", "action": "allow"}]}})
    assert load(home, project).config.permissions == {"bash": [{"pattern": "git *", "action": "allow"}]}


def test_a_global_permissions_section_survives_a_project_file_without_one(home: Path, project: Path) -> None:
    write_yaml(global_config_path(home), {"permissions": {"defaultAction": "deny"}})
    write_yaml(project_config_path(project), {"openai": {"model": "m"}})
    assert load(home, project).config.permissions == {"defaultAction": "deny"}


def test_a_non_mapping_permissions_section_is_left_for_the_permission_loader_to_refuse(
    home: Path, project: Path
) -> None:
    write_yaml(global_config_path(home), {"permissions": ["allow everything"]})
    loaded = load(home, project)
    assert loaded.warnings == ()
    with pytest.raises(ConfigurationError, match="must be a mapping"):
        policy_from_config_section(loaded.config.permissions)


def test_overlay_does_not_change_its_inputs() -> None:
    base = {"openai": {"model": "a", "apiKey": "k"}}
    layer = {"openai": {"model": "b"}}
    assert overlay(base, layer) == {"openai": {"model": "b", "apiKey": "k"}}
    assert base == {"openai": {"model": "a", "apiKey": "k"}} and layer == {"openai": {"model": "b"}}


# -- unknown keys, malformed files, bad values ---------------------------------------------------------------------


def test_unknown_keys_at_every_depth_are_reported_as_dotted_paths(home: Path, project: Path) -> None:
    path = write_yaml(
        global_config_path(home),
        {
            "bogus": 1,
            "openai": {"apikey": "x", "api_key": "y", "model": "kept"},
            "compaction": {"goalReminder": {"enabled": False, "shout": True}},
            7: "numeric key",
        },
    )
    lines = path.read_text().splitlines()
    line_of = {text.strip().partition(":")[0]: number for number, text in enumerate(lines, start=1)}
    loaded = load(home, project)
    assert loaded.warnings == (
        f"Unknown config key 'bogus' in {path}:{line_of['bogus']} ignored",
        f"Unknown config key 'openai.apikey' in {path}:{line_of['apikey']} ignored",
        f"Unknown config key 'openai.api_key' in {path}:{line_of['api_key']} ignored",
        f"Unknown config key 'compaction.goalReminder.shout' in {path}:{line_of['shout']} ignored",
        f"Unknown config key '7' in {path}:{line_of['7']} ignored",
    )
    assert loaded.config.openai.model == "kept"
    assert loaded.config.openai.api_key is None
    assert loaded.config.compaction.goal_reminder.enabled is False


def test_keys_under_permissions_are_not_judged_here(home: Path, project: Path) -> None:
    write_yaml(global_config_path(home), {"permissions": {"whatever": []}})
    assert load(home, project).warnings == ()


def test_the_original_goal_reminder_spelling_is_accepted(home: Path, project: Path) -> None:
    write_yaml(global_config_path(home), {"compaction": {"goalReminder": {"minMessagesBeforeReminder": 9}}})
    write_yaml(project_config_path(project), {"compaction": {"goalReminder": {"minMessages": 4}}})
    loaded = load(home, project)
    assert loaded.warnings == ()
    assert loaded.config.compaction.goal_reminder.min_messages == 4


@pytest.mark.parametrize("broken", ["global", "project"])
def test_a_malformed_file_of_the_user_or_a_trusted_project_stops_a_load_and_is_listed_by_a_non_strict_one(
    home: Path, project: Path, broken: str
) -> None:
    good = {"openai": {"model": "good-model"}}
    bad = "openai:\n  model: x\n  endpoint: [unclosed\nanthropic: {}\n"
    global_file = write_yaml(global_config_path(home), bad if broken == "global" else good)
    project_file = write_yaml(project_config_path(project), bad if broken == "project" else good)
    broken_file = global_file if broken == "global" else project_file
    with pytest.raises(ConfigurationError, match=rf"^Malformed YAML in {re.escape(str(broken_file))}:4: "):
        load(home, project, {"ANTHROPIC_MODEL": "claude"})
    trusted = ProjectTrust(home=home, store=TrustStore.for_home(home), trust_all=True)
    environ = {"ANTHROPIC_MODEL": "claude"}
    loaded = load_config(home=home, project=project, environ=environ, trust=trusted, strict=False)
    (error,) = loaded.errors
    assert error.startswith(f"Malformed YAML in {broken_file}:4: ")
    assert loaded.warnings == ()
    assert (loaded.config.openai.model, loaded.config.anthropic.model) == ("good-model", "claude")
    assert broken_file not in loaded.sources


def test_an_untrusted_projects_malformed_file_is_only_a_warning(home: Path, project: Path) -> None:
    path = write_yaml(project_config_path(project), "compaction:\n  enabled: [unclosed\n")
    untrusted = ProjectTrust(home=home, store=TrustStore.for_home(home))
    loaded = load_config(home=home, project=project, environ={}, trust=untrusted)
    (warning,) = loaded.warnings
    assert warning.startswith(f"Malformed YAML in {path}:3: ")
    assert warning.endswith("; the file was ignored (it is not trusted, so it cannot stop a run)")
    assert loaded.errors == ()


def test_a_file_whose_top_level_is_not_a_mapping_stops_the_load(home: Path, project: Path) -> None:
    path = write_yaml(global_config_path(home), "- just\n- a list\n")
    with pytest.raises(ConfigurationError) as raised:
        load(home, project)
    assert str(raised.value) == f"{path} must hold a mapping of sections at the top level, not list"


@pytest.mark.parametrize(
    ("document", "key", "message"),
    [
        ({"ollama": {"enabled": "maybe"}}, "ollama.enabled", "Input should be a valid boolean"),
        ({"compaction": {"protectRecentTokens": "lots"}}, "compaction.protectRecentTokens", "valid integer"),
        ({"compaction": {"protectRecentTokens": True}}, "compaction.protectRecentTokens", "valid integer"),
        ({"compaction": {"targetRatio": 1.5}}, "compaction.targetRatio", "less than or equal to 1"),
        ({"chatBehavior": {"maximumIterationsPerRequest": 0}}, "chatBehavior.maximumIterationsPerRequest", "greater"),
        ({"skills": {"roots": ["a", {"b": 1}]}}, "skills.roots", "valid string"),
        ({"openai": "sk-in-the-wrong-place"}, "openai", "valid dictionary"),
        ({"compaction": {"goalReminder": {"minMessages": -1}}}, "compaction.goalReminder.minMessages", "greater"),
    ],
)
def test_a_bad_value_is_reported_and_ignored_and_the_rest_of_the_file_loads(
    home: Path, project: Path, document: dict[str, Any], key: str, message: str
) -> None:
    write_yaml(global_config_path(home), {"ollama": {"enabled": True}, "compaction": {"protectRecentTokens": 7}})
    path = write_yaml(project_config_path(project), {**document, "advisor": {"model": "kept"}})
    loaded = load(home, project)
    (warning,) = loaded.warnings
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if text.startswith(key.split(".")[0]))
    if "." in key:  # the nested key's own line
        leaf = key.rsplit(".", 1)[1]
        line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if text.strip().startswith(leaf))
    assert warning.startswith(f"Invalid value for config key '{key}' in {path}:{line} ignored: ")
    assert message in warning
    assert loaded.config.advisor.model == "kept"
    if key == "ollama.enabled":
        assert loaded.config.ollama.enabled is True  # the global value stays
    if key == "compaction.protectRecentTokens":
        assert loaded.config.compaction.protect_recent_tokens == 7


def test_a_number_given_for_a_text_key_is_taken_as_text(home: Path, project: Path) -> None:
    write_yaml(global_config_path(home), {"openai": {"model": 4, "apiKey": 12345}})
    loaded = load(home, project)
    assert loaded.warnings == ()
    assert (loaded.config.openai.model, loaded.config.openai.api_key) == ("4", "12345")


# -- environment and .env ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"), [("true", True), ("TRUE", True), (" True ", True), ("false", False), ("yes", False)]
)
def test_enabled_variables_are_true_only_for_the_text_true(
    home: Path, project: Path, value: str, expected: bool
) -> None:
    config = load(home, project, {"OLLAMA_ENABLED": value, "LMSTUDIO_ENABLED": value, "LMSUPPLY_ENABLED": value}).config
    assert (config.ollama.enabled, config.lmstudio.enabled, config.lmsupply.enabled) == (expected,) * 3


@pytest.mark.parametrize("value", ["", "   "])
def test_blank_variables_are_ignored(home: Path, project: Path, value: str) -> None:
    write_yaml(global_config_path(home), {"openai": {"model": "from-file"}, "ollama": {"enabled": True}})
    config = load(home, project, {"OPENAI_MODEL": value, "OLLAMA_ENABLED": value, "LMSUPPLY_ENABLED": value}).config
    assert config.openai.model == "from-file"
    assert config.ollama.enabled is True
    assert config.lmsupply.enabled is True


def test_google_api_key_is_an_alias_and_the_canonical_name_wins(home: Path, project: Path) -> None:
    assert load(home, project, {"GOOGLE_API_KEY": "alias"}).config.googleai.api_key == "alias"
    both = {"GOOGLE_API_KEY": "alias", "GOOGLEAI_API_KEY": "canonical"}
    assert load(home, project, both).config.googleai.api_key == "canonical"


def test_every_listed_variable_reaches_its_key(home: Path, project: Path) -> None:
    environ = {
        "GPUSTACK_ENDPOINT": "http://gpu:8080/v1",
        "GPUSTACK_API_KEY": "gpu-key",
        "GPUSTACK_MODEL": "gpu-model",
        "GPUSTACK_EMBEDDING_MODEL": "gpu-embed",
        "GPUSTACK_RERANK_MODEL": "gpu-rerank",
        "OPENAI_API_KEY": "oa-key",
        "OPENAI_MODEL": "oa-model",
        "OPENAI_ENDPOINT": "http://127.0.0.1:1/v1",
        "ANTHROPIC_API_KEY": "an-key",
        "ANTHROPIC_MODEL": "an-model",
        "GOOGLEAI_API_KEY": "g-key",
        "GOOGLEAI_MODEL": "g-model",
        "XAI_API_KEY": "x-key",
        "XAI_MODEL": "x-model",
        "XAI_ENDPOINT": "http://x/v1",
        "AZURE_OPENAI_ENDPOINT": "http://az",
        "AZURE_OPENAI_API_KEY": "az-key",
        "AZURE_OPENAI_DEPLOYMENT": "az-deploy",
        "OLLAMA_ENDPOINT": "http://ol",
        "OLLAMA_MODEL": "ol-model",
        "OLLAMA_ENABLED": "true",
        "LMSTUDIO_ENDPOINT": "http://lm",
        "LMSTUDIO_MODEL": "lm-model",
        "LMSTUDIO_ENABLED": "true",
        "LMSUPPLY_ENABLED": "false",
    }
    dumped = load(home, project, environ).config.model_dump(by_alias=True)
    assert dumped["gpuStack"] == {
        "endpoint": "http://gpu:8080/v1",
        "apiKey": "gpu-key",
        "model": "gpu-model",
        "embeddingModel": "gpu-embed",
        "rerankModel": "gpu-rerank",
    }
    assert dumped["openai"] == {
        "apiKey": "oa-key",
        "model": "oa-model",
        "endpoint": "http://127.0.0.1:1/v1",
        "api": None,
    }
    # No variable sets the endpoint of these two (an ironhive addition, configured in YAML only).
    assert dumped["anthropic"] == {"apiKey": "an-key", "model": "an-model", "endpoint": None}
    assert dumped["googleai"] == {"apiKey": "g-key", "model": "g-model", "endpoint": None}
    assert dumped["xai"] == {"endpoint": "http://x/v1", "apiKey": "x-key", "model": "x-model"}
    assert dumped["azureopenai"] == {
        "endpoint": "http://az",
        "apiKey": "az-key",
        "deploymentName": "az-deploy",
        "api": None,
    }
    assert dumped["ollama"] == {"endpoint": "http://ol", "model": "ol-model", "enabled": True}
    assert dumped["lmstudio"] == {"endpoint": "http://lm", "model": "lm-model", "enabled": True}
    assert dumped["lmsupply"]["enabled"] is False


def test_unlisted_variables_are_ignored(home: Path, project: Path) -> None:
    environ = {"IRONHIVE_OPENAI_MODEL": "no", "OPENAI_ORGANIZATION": "no", "openai_model": "no", "OLLAMA_HOST": "no"}
    assert load(home, project, environ).config == load(home, project).config


def test_dotenv_beats_the_environment_and_is_not_loaded_into_the_process(
    home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XAI_MODEL", raising=False)
    (project / ".env").write_text('export OPENAI_MODEL="from-dotenv"  # quoted\nXAI_MODEL=grok\nOLLAMA_ENABLED=\n')
    config = load(home, project, {"OPENAI_MODEL": "from-environment", "OLLAMA_ENABLED": "true"}).config
    assert config.openai.model == "from-dotenv"
    assert config.xai.model == "grok"
    assert config.ollama.enabled is True  # an empty .env value does not override
    assert "XAI_MODEL" not in os.environ


def test_dotenv_only_counts_the_listed_variables(home: Path, project: Path) -> None:
    (project / ".env").write_text("DATABASE_URL=postgres://x\nIRONHIVE_OPENAI_MODEL=x\n")
    loaded = load(home, project)
    assert loaded.warnings == ()
    assert loaded.config == load_config(home=home, project=home / "elsewhere", environ={}).config


def test_unreadable_dotenv_lines_are_reported(home: Path, project: Path) -> None:
    (project / ".env").write_text("OPENAI_MODEL=ok\nthis is not a variable\nXAI_MODEL='unclosed\n")
    loaded = load(home, project)
    dotenv = project / ".env"
    assert loaded.warnings == (
        f"Unreadable statement at {dotenv}:2 ignored",
        f"Unreadable statement at {dotenv}:3 ignored",
    )
    assert loaded.config.openai.model == "ok"


# -- legacy settings.json ------------------------------------------------------------------------------------------


def write_legacy(home: Path, document: object) -> Path:
    path = legacy_settings_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def test_legacy_settings_are_migrated_once(home: Path, project: Path) -> None:
    legacy = write_legacy(home, {"openai": {"apiKey": "sk-legacy", "model": "gpt-legacy"}, "ollama": {"model": None}})
    first = load(home, project)
    target = global_config_path(home)
    assert first.notices == (f"Migrated legacy settings {legacy} to {target}",)
    assert first.config.openai.model == "gpt-legacy"
    assert first.sources == (target,)
    assert yaml.safe_load(target.read_text())["openai"] == {"apiKey": "sk-legacy", "model": "gpt-legacy"}
    assert target.stat().st_mode & 0o777 == 0o600
    assert legacy.exists()

    write_legacy(home, {"openai": {"model": "changed-later"}})
    second = load(home, project)
    assert second.notices == ()
    assert second.config.openai.model == "gpt-legacy"


@pytest.mark.parametrize("existing", ["global", "project"])
def test_no_migration_when_a_config_yaml_exists(home: Path, project: Path, existing: str) -> None:
    write_legacy(home, {"openai": {"model": "gpt-legacy"}})
    target = global_config_path(home) if existing == "global" else project_config_path(project)
    write_yaml(target, {"anthropic": {"model": "claude"}})
    loaded = load(home, project)
    assert loaded.notices == ()
    assert loaded.config.openai.model is None
    assert existing == "global" or not global_config_path(home).exists()


def test_no_migration_without_a_legacy_file(home: Path, project: Path) -> None:
    loaded = load(home, project)
    assert loaded.notices == () and loaded.warnings == ()
    assert not (home / ".ironhive").exists()


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_an_unreadable_legacy_file_is_reported_and_not_migrated(home: Path, project: Path, content: str) -> None:
    legacy = legacy_settings_path(home)
    legacy.parent.mkdir(parents=True)
    legacy.write_text(content)
    loaded = load(home, project)
    (warning,) = loaded.warnings
    assert warning.startswith(f"Legacy settings {legacy} not migrated: ")
    assert not global_config_path(home).exists()
