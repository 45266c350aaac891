"""MCP plugin files: finding, reading (hashed as read) and validating ``plugins.yaml``, and merging global with project.

Files, first found wins in the project directory: ``.ironhive/plugins.yaml``, ``.ironhive/plugins.yml``,
``.ironhive/plugins.json``, ``plugins.yaml``, ``plugins.yml``, ``plugins.json``; plus the user's own
``~/.ironhive/plugins.yaml``. Both apply: a project plugin replaces a global one of the same name, the project's
``defaultTimeoutMs``/``autoConnect`` win when it sets them, and ``excludePlugins`` of both files add up.

Format (keys are matched case-insensitively; plugin names, environment names and header names keep their case)::

    defaultTimeoutMs: 30000        # per request (start-up, tools/list, each call) unless a plugin sets timeoutMs
    autoConnect: true              # false: servers start on the first get_tools() instead of at start-up
    excludePlugins: []             # names not to start
    plugins:
      <name>:
        transport: stdio | http | sse   # default: stdio with a command, http with only a url
        command: <executable>           # stdio
        arguments: [...]                # stdio
        environment: {NAME: value}      # stdio, merged onto a minimal environment (PATH, HOME, USER, ...)
        workingDirectory: <dir>         # stdio, relative to the project directory (the default)
        url: <endpoint>                 # http (streamable HTTP) and sse
        headers: {Name: value}          # http and sse
        autoReconnect: true             # restart a dead server on the next call
        timeoutMs: 30000

The file's bytes are read once: the SHA-256 that trust decisions use is of exactly the text that is parsed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, TypeAlias

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ironhive.adapters.config.safe_files import JsonNestingError, decode_text, load_yaml, read_limited_bytes
from ironhive.adapters.mcp.plugin_files import find_project_plugin_file, global_plugin_file
from ironhive.adapters.permissions.jsonc import JsoncSyntaxError, load_jsonc
from ironhive.adapters.validation_errors import case_insensitive_keys, describe_validation_error, kind_of
from ironhive.domain.errors import ConfigurationError

DEFAULT_TIMEOUT_MS = 30_000

Transport: TypeAlias = Literal["stdio", "http", "sse"]
FileScope: TypeAlias = Literal["global", "project"]

_TRANSPORT_ALIASES: Mapping[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}


def _scalar_text(value: object) -> object:
    """YAML turns ``DEBUG: 1`` and ``--port 8080`` into numbers; a process only ever gets text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


_Text = Annotated[StrictStr, BeforeValidator(_scalar_text)]


def _transport(value: object) -> object:
    if isinstance(value, str):
        known = _TRANSPORT_ALIASES.get(value.strip().lower())
        if known is None:
            raise ValueError(f"unknown transport '{value}' (use stdio, http or sse)")
        return known
    return value


class PluginConfig(BaseModel):
    """One entry under ``plugins`` as written in the file."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, validate_by_name=True)

    transport: Annotated[Transport | None, BeforeValidator(_transport)] = None
    command: StrictStr | None = None
    arguments: tuple[_Text, ...] = ()
    environment: dict[str, _Text] = Field(default_factory=dict)
    working_directory: StrictStr | None = None
    url: StrictStr | None = None
    headers: dict[str, _Text] = Field(default_factory=dict)
    auto_reconnect: StrictBool = True
    timeout_ms: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _complete(self) -> PluginConfig:
        transport = self.transport or ("http" if self.url and not self.command else "stdio")
        if transport == "stdio" and not (self.command or "").strip():
            raise ValueError("a stdio plugin needs a 'command'")
        if transport != "stdio" and not (self.url or "").strip():
            raise ValueError(f"an {transport} plugin needs a 'url'")
        if transport != self.transport:
            return self.model_copy(update={"transport": transport})
        return self


class PluginFileConfig(BaseModel):
    """A whole plugin file."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, validate_by_name=True)

    plugins: dict[str, PluginConfig] = Field(default_factory=dict)
    default_timeout_ms: int = Field(default=DEFAULT_TIMEOUT_MS, gt=0)
    auto_connect: StrictBool = True
    exclude_plugins: tuple[StrictStr, ...] = ()


def _key_aliases(model: type[BaseModel]) -> dict[str, str]:
    """Lower-cased camelCase and snake_case spellings of each key, mapped to the camelCase one."""
    aliases: dict[str, str] = {}
    for name, info in model.model_fields.items():
        alias = info.alias or name
        aliases[alias.lower()] = alias
        aliases[name.lower()] = alias
    return aliases


_TOP_KEYS = _key_aliases(PluginFileConfig)
_PLUGIN_KEYS = _key_aliases(PluginConfig)


@dataclass(frozen=True, kw_only=True, slots=True)
class PluginFile:
    """A plugin file as read: where it is, whose it is, the hash of its bytes and its validated content.

    Attributes:
        path: The file's absolute path.
        scope: ``global`` (the user's own ``~/.ironhive/plugins.yaml``, always trusted) or ``project``.
        sha256: Hex SHA-256 of the bytes that were parsed.
        config: The validated content.
    """

    path: Path
    scope: FileScope
    sha256: str
    config: PluginFileConfig

    @property
    def starts_processes(self) -> bool:
        """Whether any plugin of the file, not excluded by the file itself, is a stdio plugin (runs a command)."""
        excluded = set(self.config.exclude_plugins)
        return any(p.transport == "stdio" for n, p in self.config.plugins.items() if n not in excluded)

    @property
    def has_servers(self) -> bool:
        """Whether the file defines any plugin it does not exclude itself (a project file's then need trust)."""
        excluded = set(self.config.exclude_plugins)
        return any(name not in excluded for name in self.config.plugins)


@dataclass(frozen=True, kw_only=True, slots=True)
class McpServerConfig:
    """One MCP server to connect to, ready to use (paths absolute, timeout in seconds).

    Attributes:
        name: The plugin's name (the ``<server>`` of ``mcp__<server>__<tool>``).
        transport: ``stdio`` (a child process), ``http`` (streamable HTTP) or ``sse``.
        command: The executable of a stdio server.
        arguments: Its arguments.
        environment: Variables set on top of a minimal inherited environment (PATH, HOME, USER, SHELL, TERM, LOGNAME).
        working_directory: The stdio server's working directory.
        url: The endpoint of an http or sse server.
        headers: HTTP headers sent with every request of an http or sse server.
        auto_reconnect: Whether a dead server is restarted on the next call.
        timeout: Seconds allowed for each request (progress notifications extend a call).
        startup_timeout: Seconds allowed for start-up (launch, ``initialize``, the first ``tools/list``); ``None``
            (what plugin files give) means ``timeout``.
        source: The plugin file the server comes from, when it comes from one.
    """

    name: str
    transport: Transport
    command: str | None = None
    arguments: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    working_directory: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    auto_reconnect: bool = True
    timeout: float = DEFAULT_TIMEOUT_MS / 1000
    startup_timeout: float | None = None
    source: Path | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class MergedPlugins:
    """The servers of the global and project files after merging and exclusion.

    Attributes:
        servers: Each server with the file that defined it.
        auto_connect: Whether servers start at start-up.
        excluded: Names left out by ``excludePlugins``.
    """

    servers: tuple[tuple[McpServerConfig, PluginFile], ...]
    auto_connect: bool
    excluded: tuple[str, ...]


def load_plugin_files(project_dir: Path, home: Path) -> tuple[PluginFile, ...]:
    """Read the global file (when present) and then the project file (when present), in that order.

    When the project directory is the home directory the two are the same file; it is read once, as global.

    Raises:
        ConfigurationError: A present file cannot be read or is not a valid plugin file.
    """
    files: list[PluginFile] = []
    global_path = global_plugin_file(home)
    if global_path.exists():
        files.append(read_plugin_file(global_path.absolute(), "global"))
    project_path = find_project_plugin_file(project_dir)
    if project_path is not None and not (files and _same_file(project_path, files[0].path)):
        files.append(read_plugin_file(project_path, "project"))
    return tuple(files)


def read_plugin_file(path: Path, scope: FileScope) -> PluginFile:
    """Read, hash and validate one plugin file (``.json``: JSON with comments; otherwise YAML).

    Raises:
        ConfigurationError: The file cannot be read, does not parse, or does not fit the format.
    """
    source = f"plugin file '{path}'"
    data = read_limited_bytes(path)  # refuses FIFOs, devices and oversized files, naming the file
    if data is None:
        raise ConfigurationError(f"Cannot read {source}: it does not exist")
    text = decode_text(path, data)
    document = _parse_json(text, source) if path.suffix.lower() == ".json" else _parse_yaml(text, source)
    config = parse_plugin_document(document, source)
    return PluginFile(path=path.absolute(), scope=scope, sha256=hashlib.sha256(data).hexdigest(), config=config)


def parse_plugin_document(document: object, source: str) -> PluginFileConfig:
    """Validate a parsed plugin file (``None``, an empty file, means no plugins).

    Args:
        document: What the YAML or JSON parser returned.
        source: Names the file in error messages.

    Raises:
        ConfigurationError: The document does not fit the format.
    """
    if document is None:
        return PluginFileConfig()
    if not isinstance(document, Mapping):
        raise ConfigurationError(f"Invalid {source}: the top level must be a mapping, not {kind_of(document)}")
    top = case_insensitive_keys(document.items(), _TOP_KEYS, source, "the top level")
    plugins = top.get("plugins")
    if isinstance(plugins, Mapping):
        entries: dict[str, object] = {
            str(name): (
                case_insensitive_keys(entry.items(), _PLUGIN_KEYS, source, f"plugins.{name}")
                if isinstance(entry, Mapping)
                else entry
            )
            for name, entry in plugins.items()
        }
        if any(not name.strip() for name in entries):
            raise ConfigurationError(f"Invalid {source}: a plugin has a blank name")
        top["plugins"] = entries
    elif plugins is None and "plugins" in top:
        top["plugins"] = {}
    try:
        return PluginFileConfig.model_validate(top)
    except ValidationError as error:
        raise ConfigurationError(f"Invalid {source}: {describe_validation_error(error)}") from error


def merge_plugin_files(files: tuple[PluginFile, ...], project_dir: Path) -> MergedPlugins:
    """Merge the files (later ones win per plugin name and per set top-level value) into server configs.

    Args:
        files: From ``load_plugin_files``: global first, then project.
        project_dir: Relative working directories resolve against it; it is also the default working directory.
    """
    auto_connect = True
    default_timeout_ms = DEFAULT_TIMEOUT_MS
    excluded: list[str] = []
    chosen: dict[str, tuple[PluginConfig, PluginFile]] = {}
    for plugin_file in files:
        config = plugin_file.config
        if "auto_connect" in config.model_fields_set:
            auto_connect = config.auto_connect
        if "default_timeout_ms" in config.model_fields_set:
            default_timeout_ms = config.default_timeout_ms
        excluded.extend(name for name in config.exclude_plugins if name not in excluded)
        for name, plugin in config.plugins.items():
            chosen.pop(name, None)  # a redefinition also moves the plugin to its new file's position
            chosen[name] = (plugin, plugin_file)
    servers = tuple(
        (_server_config(name, plugin, plugin_file, project_dir, default_timeout_ms), plugin_file)
        for name, (plugin, plugin_file) in chosen.items()
        if name not in excluded
    )
    return MergedPlugins(servers=servers, auto_connect=auto_connect, excluded=tuple(excluded))


def _server_config(
    name: str, plugin: PluginConfig, plugin_file: PluginFile, project_dir: Path, default_timeout_ms: int
) -> McpServerConfig:
    transport = plugin.transport or "stdio"
    working_directory = None
    if transport == "stdio":
        working_directory = (project_dir / plugin.working_directory) if plugin.working_directory else project_dir
        working_directory = working_directory.absolute()
    return McpServerConfig(
        name=name,
        transport=transport,
        command=plugin.command,
        arguments=plugin.arguments,
        environment=dict(plugin.environment),
        working_directory=working_directory,
        url=plugin.url,
        headers=dict(plugin.headers),
        auto_reconnect=plugin.auto_reconnect,
        timeout=(plugin.timeout_ms or default_timeout_ms) / 1000,
        source=plugin_file.path,
    )


# -- parsing ------------------------------------------------------------------------------------------------------


def _parse_yaml(text: str, source: str) -> object:
    try:
        return load_yaml(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigurationError(
            f"Invalid {source}: YAML syntax error{where}: {error.problem or error.context or 'malformed YAML'}"
        ) from error
    except yaml.YAMLError as error:
        raise ConfigurationError(f"Invalid {source}: YAML syntax error: {error}") from error


def _parse_json(text: str, source: str) -> object:
    if not text.strip():
        return None
    try:
        return load_jsonc(text)
    except JsonNestingError as error:
        raise ConfigurationError(f"Invalid {source}: JSON {error} (line {error.line})") from error
    except JsoncSyntaxError as error:
        raise ConfigurationError(
            f"Invalid {source}: JSON syntax error at line {error.line}, column {error.column}: {error}"
        ) from error


def _same_file(first: Path, second: Path) -> bool:
    try:
        return first.samefile(second)
    except OSError:
        return False
