"""The pydantic models of config.yaml: every section and key with its default, plus schema look-ups by dotted path.

YAML keys are camelCase (acronym provider sections all lowercase: ``openai``, ``googleai``, ``azureopenai``, ...);
Python attributes are snake_case. Values are checked strictly (``enabled: 1`` is not a boolean, ``maxCalls: "5"`` not
a number) except that a number given for a text key is taken as its text, because YAML reads ``model: 4`` as a number.
Secret keys are ordinary ``str`` fields kept out of ``repr``; :func:`is_secret_key` recognises them by name.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, StrictBool, StrictInt, ValidationError
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from ironhive.adapters.openai.spec import OLLAMA_ENDPOINT
from ironhive.domain.context.config import DEFAULT_PROTECTED_TOOL_OUTPUTS, CompactionConfig
from ironhive.domain.errors import ConfigurationError


def _number_as_text(value: object) -> object:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


Text = Annotated[str, Strict(), BeforeValidator(_number_as_text)]
"""A text value; a YAML number given for it is taken as its text."""

Number = Annotated[float, Strict()]
"""A number; whole numbers are accepted, text and booleans are not."""


class ConfigSection(BaseModel):
    """Base of every section: camelCase aliases, frozen, unknown keys ignored (the loader reports them first)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="ignore",
        frozen=True,
        protected_namespaces=(),
    )


def _secret() -> Any:
    return Field(default=None, repr=False)


class GpuStackSection(ConfigSection):
    """``gpuStack``: an OpenAI-compatible GPUStack server (configured when endpoint, apiKey and model are set)."""

    endpoint: Text | None = None
    api_key: Text | None = _secret()
    model: Text | None = None
    embedding_model: Text | None = None
    rerank_model: Text | None = None


class OpenAISection(ConfigSection):
    """``openai`` (configured when apiKey and model are set)."""

    api_key: Text | None = _secret()
    model: Text | None = None
    endpoint: Text = "https://api.openai.com/v1"
    api: Literal["responses", "chat"] | None = None  # unset: Responses for api.openai.com, chat completions elsewhere


class AnthropicSection(ConfigSection):
    """``anthropic`` (configured when apiKey and model are set; ``endpoint``, an ironhive addition, for a proxy)."""

    api_key: Text | None = _secret()
    model: Text | None = None
    endpoint: Text | None = None


class GoogleAISection(ConfigSection):
    """``googleai`` (configured when apiKey and model are set; ``endpoint``, an ironhive addition, for a proxy)."""

    api_key: Text | None = _secret()
    model: Text | None = None
    endpoint: Text | None = None


class AzureOpenAISection(ConfigSection):
    """``azureopenai``: accepted and shown, as in the original."""

    endpoint: Text | None = None
    api_key: Text | None = _secret()
    deployment_name: Text | None = None
    api: Literal["responses", "chat"] | None = None  # unset: chat completions (Responses is regional on Azure)


class XAISection(ConfigSection):
    """``xai`` (configured when apiKey and model are set)."""

    endpoint: Text = "https://api.x.ai/v1"
    api_key: Text | None = _secret()
    model: Text | None = None


class OllamaSection(ConfigSection):
    """``ollama`` (configured when enabled)."""

    endpoint: Text = OLLAMA_ENDPOINT
    model: Text | None = None
    enabled: StrictBool = False


class LMStudioSection(ConfigSection):
    """``lmstudio`` (configured when enabled and a model is set)."""

    endpoint: Text = "http://localhost:1234/v1"
    model: Text | None = None
    enabled: StrictBool = False


class LMSupplySection(ConfigSection):
    """``lmsupply``: in-process local inference, on by default.

    ``modelPath`` (a local GGUF file) and ``huggingFaceRepo``/``huggingFaceFile`` (a GGUF to download) are ironhive
    additions; the other keys are the original's.
    """

    enabled: StrictBool = True
    embedder_model: Text = "auto"
    reranker_model: Text = "auto"
    generator_model: Text = "gguf:auto"
    max_context_length: StrictInt | None = Field(default=None, ge=1)
    model_path: Text | None = None
    hugging_face_repo: Text | None = None
    hugging_face_file: Text | None = None
    # llama.cpp's extra buffer types (AMX, weight repacking): None probes the CPU; false avoids a native crash.
    extra_buffer_types: StrictBool | None = None


class GoalReminderSection(ConfigSection):
    """``compaction.goalReminder`` (``minMessagesBeforeReminder`` is the original's spelling of ``minMessages``)."""

    enabled: StrictBool = True
    min_messages: StrictInt = Field(default=6, ge=0, validation_alias="minMessages", serialization_alias="minMessages")
    max_goal_chars: StrictInt = Field(default=500, ge=4)
    include_original_request: StrictBool = True


GOAL_REMINDER_SPELLINGS = {"minMessagesBeforeReminder": "minMessages"}
"""Other accepted spellings of ``goalReminder`` keys, mapped to the canonical key by the loader."""


class CompactionSection(ConfigSection):
    """``compaction``: every key of the original's CompactionConfig (no ``enabled``: compaction is always wired).

    Ranges are those :class:`~ironhive.domain.context.config.CompactionConfig` enforces, checked here as well so one
    bad value is reported and ignored at load time instead of failing start-up.
    """

    protect_recent_tokens: StrictInt = Field(default=40000, ge=0)
    minimum_prune_tokens: StrictInt = Field(default=20000, ge=0)
    protected_tool_outputs: list[Text] = Field(default_factory=lambda: list(DEFAULT_PROTECTED_TOOL_OUTPUTS))
    target_ratio: Number = Field(default=0.70, gt=0.0, le=1.0)
    use_token_based_compaction: StrictBool = True
    threshold_percentage: Number = Field(default=0.92, ge=0.5, le=1.0)
    enable_observation_masking: StrictBool = True
    observation_masking_protected_turns: StrictInt = Field(default=3, ge=0)
    observation_masking_min_result_length: StrictInt = Field(default=200, ge=0)
    observation_masking_protected_rounds: StrictInt | None = Field(default=None, ge=0)
    goal_reminder: GoalReminderSection = Field(default_factory=GoalReminderSection)
    enable_tool_result_compaction: StrictBool = True
    max_tool_result_chars: StrictInt = Field(default=30000, ge=1)
    tool_result_keep_head_lines: StrictInt = Field(default=50, ge=0)
    tool_result_keep_tail_lines: StrictInt = Field(default=20, ge=0)
    use_anchored_compaction: StrictBool = False
    max_anchor_state_chars: StrictInt = 2000
    max_context_tokens: StrictInt | None = Field(default=None, ge=1)
    compact_on_overflow: StrictBool = True
    tool_schema_compression: Any = None
    summary_model: Text | None = None
    summary_max_output_tokens: StrictInt | None = Field(default=None, ge=1)

    def to_domain(self) -> CompactionConfig:
        """The domain's compaction settings (``toolSchemaCompression`` is accepted and ignored, as in the original).

        Returns:
            The equivalent :class:`CompactionConfig`.
        """
        values = self.model_dump(by_alias=True, exclude={"tool_schema_compression"})
        return CompactionConfig.from_mapping(values)


class WebSearchSection(ConfigSection):
    """``webSearch``."""

    enabled: StrictBool = True
    default_max_results: StrictInt = Field(default=10, ge=1)
    max_sitemap_entries: StrictInt = Field(default=50, ge=0)
    duck_duck_go_region: Text | None = None
    tavily_api_key: Text | None = _secret()
    search_api_key: Text | None = _secret()
    search_api_engine: Text = "google"


class DeepResearchSection(ConfigSection):
    """``deepResearch`` (``tavilyApiKey`` falls back to ``webSearch.tavilyApiKey``)."""

    enabled: StrictBool = False
    tavily_api_key: Text | None = _secret()
    max_iterations: StrictInt = Field(default=5, ge=1)
    provider: Text | None = None
    model: Text | None = None


class ChatBehaviorSection(ConfigSection):
    """``chatBehavior``: caps of the tool-call loop that the CLI and ``run --server`` build."""

    maximum_iterations_per_request: StrictInt = Field(default=10, ge=1)
    maximum_consecutive_errors_per_request: StrictInt = Field(default=3, ge=1)


class AdvisorSection(ConfigSection):
    """``advisor``: a stronger model the working model may consult; off until ``model`` is set."""

    provider: Text | None = None
    model: Text | None = None
    max_calls: StrictInt = Field(default=5, ge=0)


class SkillsSection(ConfigSection):
    """``skills``: Agent Skills roots; off until a root names an existing directory."""

    roots: list[Text] = Field(default_factory=list)
    enabled: list[Text] | None = None
    exclude: list[Text] = Field(default_factory=list)
    max_metadata_characters: StrictInt = Field(default=12000, ge=0)
    accept_unknown_fields: StrictBool = False


class ApprovalSection(ConfigSection):
    """``approval``: how long a human-approval request waits before it counts as a rejection (post-readme key)."""

    timeout_seconds: Number = Field(default=300.0, gt=0)


class DaemonSection(ConfigSection):
    """``daemon``: the warm process that non-interactive runs fork from (an ironhive addition).

    ``enabled``: ``false`` never uses nor starts it, ``true`` uses it even where ``CI`` is set; unset, it is used
    except where ``CI`` is set. ``idleSeconds``: how long it waits for the next run before it exits. Read from the
    user's ``~/.ironhive/config.yaml`` only (a project's file cannot start processes); the ``IRONHIVE_DAEMON``
    variable (``0``/``1``) and the ``--no-daemon`` flag win over it.
    """

    enabled: StrictBool | None = None
    idle_seconds: Number = Field(default=300.0, gt=0)


class ServerSection(ConfigSection):
    """``server``: ``ironhive serve`` and ``ironhive worker`` (an ironhive addition).

    Read from the user's ``~/.ironhive/config.yaml`` and the environment only: a project's file cannot open a port,
    change the token, widen the origins or point turns at another Redis.

    ``host``/``port``: where ``serve`` listens (loopback by default; another address needs ``--allow-remote`` and a
    configured token). ``token``: the bearer token (generated at first start and kept owner-only when unset).
    ``allowedOrigins``: browser origins allowed to call the API (exact ``scheme://host[:port]``; none by default).
    ``maxConcurrentTurns``: turns running at once in this process (a worker's own limit with Redis).
    ``maxQueuedTurns``: turns waiting per session before a message is answered 429. ``maxRequestBytes``: the largest
    request body. ``eventLogSize``: events kept per session for replay. ``heartbeatSeconds``: SSE keep-alive period.
    ``redis``: a Redis URL; set, sessions, events and turns live there and ``ironhive worker`` runs the turns.
    ``visibilityTimeoutSeconds``: how long a turn of a worker that stopped answering waits before another worker
    takes it over.
    """

    host: Text = "127.0.0.1"
    port: StrictInt = Field(default=8765, ge=0, le=65535)
    token: Text | None = None
    allowed_origins: list[Text] = Field(default_factory=list)
    max_concurrent_turns: StrictInt = Field(default=8, ge=1)
    max_queued_turns: StrictInt = Field(default=16, ge=1)
    max_request_bytes: StrictInt = Field(default=1_048_576, ge=1024)
    event_log_size: StrictInt = Field(default=10_000, ge=100)
    heartbeat_seconds: Number = Field(default=15.0, gt=0)
    redis: Text | None = None
    visibility_timeout_seconds: Number = Field(default=60.0, gt=0)


class ProvidersSection(ConfigSection):
    """``providers``: ironhive's failover chain (an ironhive addition).

    ``chain`` lists provider names tried in order when one fails with a retryable error; each is retried
    ``maxRetries`` times with exponential back-off starting at ``initialBackoffSeconds``. The names are checked by the
    provider selection, not here. Empty chain: only the selected provider.
    """

    chain: list[Text] = Field(default_factory=list)
    max_retries: StrictInt = Field(default=2, ge=0)
    initial_backoff_seconds: Number = Field(default=1.0, ge=0)


class SandboxSection(ConfigSection):
    """``permissions.sandbox``: the OS sandbox ``execute_command`` runs in (bubblewrap on Linux, where it can run).

    ``enabled: false`` runs commands unsandboxed even where a sandbox can run; ``network: true`` lets sandboxed
    commands use the network. It sits in the raw ``permissions`` section, so it is read by :func:`sandbox_section`
    and left out of the rules by :func:`permission_rules`.
    """

    enabled: StrictBool = True
    network: StrictBool = False


SANDBOX_KEY = "sandbox"
"""The key of :class:`SandboxSection` inside the ``permissions`` section."""


def sandbox_section(permissions: object) -> SandboxSection:
    """The ``sandbox`` mapping of a raw ``permissions`` section (the defaults when either is absent).

    Raises:
        ConfigurationError: The mapping has an unknown key or a value of the wrong type.
    """
    value = permissions.get(SANDBOX_KEY) if isinstance(permissions, Mapping) else None
    if value is None:
        return SandboxSection()
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"Invalid config.yaml permissions.{SANDBOX_KEY}: it must be a mapping")
    unknown = [str(key) for key in value if key not in accepted_keys(SandboxSection)]
    if unknown:
        raise ConfigurationError(f"Invalid config.yaml permissions.{SANDBOX_KEY}: unknown key '{unknown[0]}'")
    try:
        return SandboxSection.model_validate(value)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise ConfigurationError(f"Invalid config.yaml permissions.{SANDBOX_KEY}.{where}: {problem['msg']}") from error


def permission_rules(permissions: object) -> object:
    """A raw ``permissions`` section without its ``sandbox`` key: what the permission loader reads.

    A section that only configures the sandbox is no policy (``None``): setting ``permissions.sandbox.network`` must
    not replace the default rules with an empty, ask-for-everything policy.
    """
    if not isinstance(permissions, Mapping) or SANDBOX_KEY not in permissions:
        return permissions
    rules = {key: value for key, value in permissions.items() if key != SANDBOX_KEY}
    return rules or None


class IronHiveConfig(ConfigSection):
    """The whole merged configuration.

    ``permissions`` stays raw: the camelCase mapping of the last layer that has the section, or ``None``. It is not
    checked here but handed as it is to :func:`ironhive.adapters.permissions.loader.policy_from_config_section`, which
    makes anything wrong with it (even a non-mapping) a start-up error rather than a silent fall-back to the defaults.
    Its ``sandbox`` key is the exception, read by :func:`sandbox_section`.
    """

    gpu_stack: GpuStackSection = Field(default_factory=GpuStackSection)
    openai: OpenAISection = Field(default_factory=OpenAISection)
    anthropic: AnthropicSection = Field(default_factory=AnthropicSection)
    googleai: GoogleAISection = Field(default_factory=GoogleAISection)
    azureopenai: AzureOpenAISection = Field(default_factory=AzureOpenAISection)
    xai: XAISection = Field(default_factory=XAISection)
    ollama: OllamaSection = Field(default_factory=OllamaSection)
    lmstudio: LMStudioSection = Field(default_factory=LMStudioSection)
    lmsupply: LMSupplySection = Field(default_factory=LMSupplySection)
    permissions: Any = None
    compaction: CompactionSection = Field(default_factory=CompactionSection)
    web_search: WebSearchSection = Field(default_factory=WebSearchSection)
    deep_research: DeepResearchSection = Field(default_factory=DeepResearchSection)
    chat_behavior: ChatBehaviorSection = Field(default_factory=ChatBehaviorSection)
    advisor: AdvisorSection = Field(default_factory=AdvisorSection)
    skills: SkillsSection = Field(default_factory=SkillsSection)
    approval: ApprovalSection = Field(default_factory=ApprovalSection)
    providers: ProvidersSection = Field(default_factory=ProvidersSection)
    daemon: DaemonSection = Field(default_factory=DaemonSection)
    server: ServerSection = Field(default_factory=ServerSection)


WHOLE_SECTIONS = frozenset({"permissions"})
"""Top-level sections a later layer replaces as a whole: a present ``permissions`` section is a complete policy."""

_SECRET_WORDS = re.compile(r"apikey|api_key|secret|password", re.IGNORECASE)
_TOKEN_SUFFIX = re.compile(r"token$", re.IGNORECASE)


def is_secret_key(dotted: str) -> bool:
    """Whether a dotted key holds a secret: its last segment names an API key, a secret, a password or a token.

    ``token`` counts only as the ending (``hfToken``), so ``maxContextTokens`` or ``useTokenBasedCompaction`` are not
    secrets.

    Args:
        dotted: A dotted key such as ``openai.apiKey``.

    Returns:
        True for secret keys.
    """
    last = dotted.rsplit(".", 1)[-1]
    return bool(_SECRET_WORDS.search(last) or _TOKEN_SUFFIX.search(last))


def section_model(annotation: object) -> type[ConfigSection] | None:
    """The section model a field's annotation holds (``None`` for values and raw mappings)."""
    if isinstance(annotation, type) and issubclass(annotation, ConfigSection):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        for argument in get_args(annotation):
            found = section_model(argument)
            if found is not None:
                return found
    return None


def accepted_keys(model: type[ConfigSection]) -> dict[str, FieldInfo]:
    """The exact YAML spellings a section accepts, each with its field (canonical aliases first).

    Args:
        model: The section model.

    Returns:
        Spelling → field.
    """
    keys: dict[str, FieldInfo] = {}
    for name, info in model.model_fields.items():
        keys[info.serialization_alias or info.alias or name] = info
    if model is GoalReminderSection:
        for other, canonical in GOAL_REMINDER_SPELLINGS.items():
            keys[other] = keys[canonical]
    return keys


def canonical_key(model: type[ConfigSection], key: str) -> str:
    """The canonical spelling of an accepted key (``minMessagesBeforeReminder`` → ``minMessages``)."""
    if model is GoalReminderSection:
        return GOAL_REMINDER_SPELLINGS.get(key, key)
    return key


def field_at(path: Sequence[str]) -> FieldInfo | None:
    """The schema field a path of canonical keys names, or ``None`` when the schema has no such key.

    Args:
        path: Keys from the top, e.g. ``("openai", "apiKey")``.

    Returns:
        The field, or ``None`` (keys under ``permissions`` are not described by this schema).
    """
    model: type[ConfigSection] | None = IronHiveConfig
    info: FieldInfo | None = None
    for key in path:
        if model is None:
            return None
        info = accepted_keys(model).get(key)
        if info is None:
            return None
        model = section_model(info.annotation)
    return info


def section_keys(path: Sequence[str]) -> dict[str, FieldInfo] | None:
    """The keys accepted below a path (``()`` = the top level), or ``None`` when the path is not a known section."""
    if not path:
        return accepted_keys(IronHiveConfig)
    info = field_at(path)
    model = section_model(info.annotation) if info is not None else None
    return accepted_keys(model) if model is not None else None


def value_kind(info: FieldInfo) -> str:
    """The broad kind of a field's value: ``text``, ``list``, ``section`` or ``other``."""
    annotation = info.annotation
    if section_model(annotation) is not None:
        return "section"
    candidates = [item for item in get_args(annotation) if item is not type(None)] if _is_union(annotation) else []
    kinds = {_plain_kind(item) for item in (candidates or [annotation])}
    return kinds.pop() if len(kinds) == 1 else "other"


def _is_union(annotation: object) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def _plain_kind(annotation: object) -> str:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _plain_kind(get_args(annotation)[0])
    if annotation is str:
        return "text"
    if origin is list:
        return "list"
    return "other"
