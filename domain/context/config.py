"""CompactionConfig: the `compaction` settings (inventory §C.3) with their defaults and validation."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from ironhive.domain.errors import ConfigurationError

DEFAULT_PROTECTED_TOOL_OUTPUTS = ("read_file", "grep_files", "glob_files", "grep", "glob")
"""Our built-in read-only tools plus the original product's names for them."""


@dataclass(frozen=True, kw_only=True, slots=True)
class GoalReminderConfig:
    """The goal reminder appended to every prepared request (``compaction.goalReminder``).

    Attributes:
        enabled: Whether to append the reminder at all.
        min_messages: Non-system messages needed before a reminder is appended.
        max_goal_chars: Longest request text carried (longer ones end in "...").
        include_original_request: Also carry the session's first request when it differs from the latest.
    """

    enabled: bool = True
    min_messages: int = 6
    max_goal_chars: int = 500
    include_original_request: bool = True

    def __post_init__(self) -> None:
        _require_bool("goalReminder.enabled", self.enabled)
        _require_bool("goalReminder.includeOriginalRequest", self.include_original_request)
        _require_int("goalReminder.minMessages", self.min_messages, minimum=0)
        _require_int("goalReminder.maxGoalChars", self.max_goal_chars, minimum=4)


@dataclass(frozen=True, kw_only=True, slots=True)
class CompactionConfig:
    """Every key of the ``compaction`` section, snake_case, with the original product's defaults.

    Attributes:
        protect_recent_tokens: Most recent tokens always kept (clamped to half the window).
        minimum_prune_tokens: Compact only when at least this much is prunable (clamped to a quarter of the window).
        protected_tool_outputs: Tools whose call and result survive truncating compaction.
        target_ratio: Compaction shrinks the request to this share of the window.
        use_token_based_compaction: Token-based trigger; ``False`` selects the legacy percentage threshold.
        threshold_percentage: The legacy trigger's share of the window (0.5–1.0).
        enable_observation_masking: Replace older tool results by placeholders.
        observation_masking_protected_turns: Most recent user turns whose tool results stay verbatim.
        observation_masking_min_result_length: Results shorter than this are never masked.
        observation_masking_protected_rounds: When set, only the last N tool rounds stay verbatim.
        goal_reminder: The goal reminder's settings.
        enable_tool_result_compaction: Cut big tool results to their head and tail.
        max_tool_result_chars: Results longer than this are cut.
        tool_result_keep_head_lines: Lines kept from the start of a cut result.
        tool_result_keep_tail_lines: Lines kept from the end of a cut result.
        use_anchored_compaction: Keep a structured "[CONVERSATION STATE]" block across compactions.
        max_anchor_state_chars: Cap of that block (≤ 0 = unlimited).
        max_context_tokens: The model's window, overriding the model catalog.
        compact_on_overflow: Window unknown: compact only when the provider reports an overflow.
        tool_schema_compression: Accepted for compatibility and ignored (as in the original since 0.29.1).
        summary_model: The model that writes summaries of pruned history (``None``: the working model).
        summary_max_output_tokens: Output cap of a summary call (``None``: a quarter of the compaction target).
    """

    protect_recent_tokens: int = 40000
    minimum_prune_tokens: int = 20000
    protected_tool_outputs: tuple[str, ...] = DEFAULT_PROTECTED_TOOL_OUTPUTS
    target_ratio: float = 0.70
    use_token_based_compaction: bool = True
    threshold_percentage: float = 0.92
    enable_observation_masking: bool = True
    observation_masking_protected_turns: int = 3
    observation_masking_min_result_length: int = 200
    observation_masking_protected_rounds: int | None = None
    goal_reminder: GoalReminderConfig = field(default_factory=GoalReminderConfig)
    enable_tool_result_compaction: bool = True
    max_tool_result_chars: int = 30000
    tool_result_keep_head_lines: int = 50
    tool_result_keep_tail_lines: int = 20
    use_anchored_compaction: bool = False
    max_anchor_state_chars: int = 2000
    max_context_tokens: int | None = None
    compact_on_overflow: bool = True
    tool_schema_compression: str | None = None
    summary_model: str | None = None
    summary_max_output_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("protect_recent_tokens", "minimum_prune_tokens", "observation_masking_protected_turns"):
            _require_int(_camel(name), getattr(self, name), minimum=0)
        _require_int("observationMaskingMinResultLength", self.observation_masking_min_result_length, minimum=0)
        _require_int("maxToolResultChars", self.max_tool_result_chars, minimum=1)
        _require_int("toolResultKeepHeadLines", self.tool_result_keep_head_lines, minimum=0)
        _require_int("toolResultKeepTailLines", self.tool_result_keep_tail_lines, minimum=0)
        _require_int("maxAnchorStateChars", self.max_anchor_state_chars, minimum=None)
        if self.observation_masking_protected_rounds is not None:
            _require_int("observationMaskingProtectedRounds", self.observation_masking_protected_rounds, minimum=0)
        if self.max_context_tokens is not None:
            _require_int("maxContextTokens", self.max_context_tokens, minimum=1)
        if self.summary_max_output_tokens is not None:
            _require_int("summaryMaxOutputTokens", self.summary_max_output_tokens, minimum=1)
        _require_ratio("targetRatio", self.target_ratio, low=0.0, high=1.0, low_inclusive=False)
        _require_ratio("thresholdPercentage", self.threshold_percentage, low=0.5, high=1.0, low_inclusive=True)
        for name in (
            "use_token_based_compaction",
            "enable_observation_masking",
            "enable_tool_result_compaction",
            "use_anchored_compaction",
            "compact_on_overflow",
        ):
            _require_bool(_camel(name), getattr(self, name))
        tools = self.protected_tool_outputs
        if isinstance(tools, str) or not all(isinstance(name, str) for name in tools):
            raise ConfigurationError("compaction.protectedToolOutputs must be a list of tool names.")
        # A list from YAML becomes a tuple so the frozen config stays hashable and immutable.
        object.__setattr__(self, "protected_tool_outputs", tuple(tools))
        if not isinstance(self.goal_reminder, GoalReminderConfig):
            raise ConfigurationError("compaction.goalReminder must be a GoalReminderConfig.")

    @classmethod
    def from_mapping(cls, section: Mapping[str, object] | None) -> CompactionConfig:
        """Build the config from the YAML ``compaction`` section (camelCase keys, as in the original).

        Args:
            section: The section's keys and values; ``None`` or empty gives the defaults.

        Returns:
            The validated config.

        Raises:
            ConfigurationError: A key is unknown or a value has the wrong type or range.
        """
        known = {_camel(spec.name): spec.name for spec in fields(cls)}
        values: dict[str, object] = {}
        for key, value in (section or {}).items():
            if key not in known:
                raise ConfigurationError(
                    f"Unknown compaction setting '{key}'. Known settings: {', '.join(sorted(known))}."
                )
            if key == "goalReminder":
                value = _goal_reminder(value)
            values[known[key]] = value
        return cls(**values)  # type: ignore[arg-type]  # __post_init__ validates each value's type


def _goal_reminder(value: object) -> GoalReminderConfig:
    if value is None:
        return GoalReminderConfig()
    if not isinstance(value, Mapping):
        raise ConfigurationError("compaction.goalReminder must be a mapping such as {enabled: false}.")
    known = {_camel(spec.name): spec.name for spec in fields(GoalReminderConfig)}
    known["minMessagesBeforeReminder"] = "min_messages"  # the original's property name
    unknown = sorted(str(key) for key in value if key not in known)
    if unknown:
        raise ConfigurationError(f"Unknown compaction.goalReminder setting(s): {', '.join(unknown)}.")
    return GoalReminderConfig(**{known[key]: item for key, item in value.items()})


def _camel(snake: str) -> str:
    return re.sub(r"_([a-z])", lambda match: match.group(1).upper(), snake)


def _require_int(name: str, value: object, *, minimum: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"compaction.{name} must be a whole number, not {value!r}.")
    if minimum is not None and value < minimum:
        raise ConfigurationError(f"compaction.{name} must be at least {minimum}, not {value}.")


def _require_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigurationError(f"compaction.{name} must be true or false, not {value!r}.")


def _require_ratio(name: str, value: object, *, low: float, high: float, low_inclusive: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(f"compaction.{name} must be a number, not {value!r}.")
    too_low = value < low if low_inclusive else value <= low
    if too_low or value > high:
        opening = "[" if low_inclusive else "("
        raise ConfigurationError(f"compaction.{name} must be in {opening}{low}, {high}], not {value}.")
