"""CompactionConfig: every §C.3 key with its default, validation, and reading the camelCase YAML section."""

from __future__ import annotations

import pytest

from ironhive.domain.context.config import CompactionConfig, GoalReminderConfig
from ironhive.domain.errors import ConfigurationError


def test_defaults_are_the_originals() -> None:
    config = CompactionConfig()
    assert (config.protect_recent_tokens, config.minimum_prune_tokens) == (40000, 20000)
    assert config.protected_tool_outputs == ("read_file", "grep_files", "glob_files", "grep", "glob")
    assert (config.target_ratio, config.threshold_percentage) == (0.70, 0.92)
    assert config.use_token_based_compaction and config.enable_observation_masking
    assert (config.observation_masking_protected_turns, config.observation_masking_min_result_length) == (3, 200)
    assert config.observation_masking_protected_rounds is None
    assert config.goal_reminder == GoalReminderConfig(enabled=True, min_messages=6, max_goal_chars=500)
    assert config.enable_tool_result_compaction and config.max_tool_result_chars == 30000
    assert (config.tool_result_keep_head_lines, config.tool_result_keep_tail_lines) == (50, 20)
    assert not config.use_anchored_compaction and config.max_anchor_state_chars == 2000
    assert config.max_context_tokens is None and config.compact_on_overflow
    assert config.summary_model is None


@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"protect_recent_tokens": -1}, "protectRecentTokens must be at least 0"),
        ({"minimum_prune_tokens": 1.5}, "minimumPruneTokens must be a whole number"),
        ({"target_ratio": 0.0}, "targetRatio must be in (0.0, 1.0]"),
        ({"target_ratio": 1.2}, "targetRatio must be in (0.0, 1.0]"),
        ({"threshold_percentage": 0.4}, "thresholdPercentage must be in [0.5, 1.0]"),
        ({"max_tool_result_chars": 0}, "maxToolResultChars must be at least 1"),
        ({"observation_masking_protected_rounds": -2}, "observationMaskingProtectedRounds must be at least 0"),
        ({"max_context_tokens": 0}, "maxContextTokens must be at least 1"),
        ({"enable_observation_masking": "yes"}, "enableObservationMasking must be true or false"),
        ({"protected_tool_outputs": "read_file"}, "protectedToolOutputs must be a list"),
        ({"observation_masking_protected_turns": True}, "observationMaskingProtectedTurns must be a whole number"),
    ],
)
def test_invalid_values_raise_a_configuration_error_naming_the_key(settings: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigurationError, match="compaction") as raised:
        CompactionConfig(**settings)  # type: ignore[arg-type]
    assert fragment in str(raised.value)


def test_the_threshold_accepts_its_whole_documented_range() -> None:
    assert CompactionConfig(threshold_percentage=0.5).threshold_percentage == 0.5
    assert CompactionConfig(threshold_percentage=1.0).threshold_percentage == 1.0


def test_from_mapping_reads_camel_case_keys() -> None:
    config = CompactionConfig.from_mapping(
        {
            "protectRecentTokens": 1000,
            "protectedToolOutputs": ["read_file"],
            "maxContextTokens": 65536,
            "compactOnOverflow": False,
            "observationMaskingProtectedRounds": 2,
            "goalReminder": {"enabled": False},
            "toolSchemaCompression": "aggressive",
        }
    )
    assert config.protect_recent_tokens == 1000
    assert config.protected_tool_outputs == ("read_file",)
    assert config.max_context_tokens == 65536 and not config.compact_on_overflow
    assert config.observation_masking_protected_rounds == 2
    assert not config.goal_reminder.enabled
    assert CompactionConfig.from_mapping(None) == CompactionConfig()
    assert CompactionConfig.from_mapping({"goalReminder": None}).goal_reminder.enabled


def test_from_mapping_rejects_unknown_keys_and_bad_values() -> None:
    with pytest.raises(ConfigurationError, match="Unknown compaction setting 'protectRecent'"):
        CompactionConfig.from_mapping({"protectRecent": 10})
    with pytest.raises(ConfigurationError, match="goalReminder"):
        CompactionConfig.from_mapping({"goalReminder": {"enable": False}})
    with pytest.raises(ConfigurationError, match="targetRatio"):
        CompactionConfig.from_mapping({"targetRatio": "70%"})
