"""What a provider is, declared once beside its adapter: the :class:`ProviderSpec` every provider folder holds."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ironhive.domain.errors import ConfigurationError
from ironhive.ports.chat import ChatClient

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.adapters.diagnostics.connectivity import ModelEndpoint
    from ironhive.adapters.diagnostics.report import Check
    from ironhive.ports.models import ModelLister

ByteProgress = Callable[[int, int | None], None]
"""Told the bytes done (and the total, when known) of a download."""


class ClientSurface(Protocol):
    """What the surface building a client shows while it works (the CLI: download and loading progress on stderr)."""

    def downloading(self, description: str) -> AbstractContextManager[ByteProgress]:
        """A context reporting the progress of one download (a model file)."""
        ...

    def local_client(self, *, model_path: Path, n_ctx: int | None, extra_buffer_types: bool | None) -> ChatClient:
        """The in-process llama.cpp client for ``model_path`` (the CLI's shows its loading progress)."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Connection:
    """How to reach a remote provider: the wire it speaks and its settings from the configuration.

    Attributes:
        api_key: The key (a fixed placeholder for local servers that need none).
        base_url: The API base URL; ``None`` means the SDK's default.
        model: The configured model (Azure: the deployment), when set.
        headers: Extra headers of every request (Azure's ``api-key``).
        api: The wire API of an OpenAI provider (``responses`` or ``chat``); ``None`` for chat completions.
    """

    api_key: str
    base_url: str | None
    model: str | None
    headers: dict[str, str] | None = None
    api: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Choice:
    """A provider's client, not built yet.

    Attributes:
        model: The model name shown to the user.
        build: Builds the chat client (builds no SDK client and loads no model: that happens on first use).
    """

    model: str
    build: Callable[[], ChatClient]


WireClient = Callable[[str, Connection, str], ChatClient]
"""Builds the chat client of a remote provider from its name, connection and model."""
WireLister = Callable[[str, Connection, float], "ModelLister"]
"""Builds the model lister of a remote provider from its name, connection and timeout (seconds)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ProviderSpec:
    """Everything ironhive knows about one provider; the registry collects them in selection order.

    A remote provider declares ``connect``, ``client``, ``lister`` and ``probe``; an in-process one declares ``choose``
    (and ``default``, ``local_lister`` and ``local_check``).

    Attributes:
        name: The canonical name (``--provider``, ``-m name/model``, ``providers.chain``).
        title: The name people read (the README's table).
        aliases: Other names ``--provider`` accepts (case-insensitive).
        section: The config.yaml section holding its settings (``gpuStack``), or ``None``.
        environment: Each environment variable it reads with the section key it sets, in the order applied.
        required: Section keys that must all be set before it counts as configured.
        model_keys: Section keys naming a model (or deployment): the only ones an untrusted project may set.
        switch: A boolean section key that must be true before it counts as configured (``enabled``).
        ready: A further condition to count as configured (local inference: a model is at hand).
        automatic: Whether a run picks it without ``--provider`` when it is configured.
        listed: Whether ``ironhive models`` lists it without ``-p`` when it is configured.
        usable_with_model: Whether ``--provider NAME -m MODEL`` works even when it is not configured.
        model_required: Whether a run needs a model name (Azure's deployment stands in for one).
        through: What carries the calls (the README's table).
        connect: Its connection settings, read from the configuration.
        client: Builds its chat client.
        lister: Builds its model lister.
        probe: Doctor's connectivity check: where it lists its models (``environ`` may redirect the SDK's default).
        choose: The choice of an in-process provider, from the configuration and the ``-m`` value.
        default: The model an in-process provider would run.
        local_lister: The model lister of an in-process provider.
        local_check: Doctor's check of an in-process provider.
    """

    name: str
    title: str
    aliases: tuple[str, ...] = ()
    section: str | None = None
    environment: tuple[tuple[str, str], ...] = ()
    required: tuple[str, ...] = ()
    model_keys: tuple[str, ...] = ()
    switch: str | None = None
    ready: Callable[[IronHiveConfig], bool] | None = None
    automatic: bool = True
    listed: bool = True
    usable_with_model: bool = False
    model_required: bool = True
    through: str = ""
    connect: Callable[[IronHiveConfig], Connection] | None = None
    client: WireClient | None = None
    lister: WireLister | None = None
    probe: Callable[[ProviderSpec, Connection, Mapping[str, str]], ModelEndpoint] | None = None
    choose: Callable[[IronHiveConfig, str | None, ClientSurface | None], Choice] | None = None
    default: Callable[[IronHiveConfig], str | None] | None = None
    local_lister: Callable[[IronHiveConfig, Path], ModelLister] | None = None
    local_check: Callable[[IronHiveConfig, Path, Mapping[str, str], bool], list[Check]] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The canonical name, then the aliases."""
        return (self.name, *self.aliases)

    @property
    def remote(self) -> bool:
        """Whether it is reached over HTTP through an SDK."""
        return self.connect is not None

    def settings(self, config: IronHiveConfig) -> dict[str, object]:
        """Its section's values by their config.yaml keys (empty without a section)."""
        if self.section is None:
            return {}
        section = getattr(config, _attribute(self.section))
        values: dict[str, object] = section.model_dump(by_alias=True)
        return values

    def is_configured(self, config: IronHiveConfig) -> bool:
        """Whether it has what it needs: the switch on, every required key set, and ``ready``."""
        values = self.settings(config)
        if self.switch is not None and values.get(self.switch) is not True:
            return False
        if not all(values.get(key) for key in self.required):
            return False
        return self.ready is None or self.ready(config)

    def choice(self, config: IronHiveConfig, model: str | None, surface: ClientSurface | None = None) -> Choice:
        """Its client for ``model`` (``None``: the configured one), not built yet.

        Raises:
            ConfigurationError: A remote provider has no model to run.
        """
        if self.choose is not None:
            return self.choose(config, model, surface)
        connection, client = self._remote(config)
        chosen = model or connection.model or ""
        if self.model_required and not chosen:
            raise ConfigurationError(f"Provider '{self.name}' needs a model: set {self.name}.model or pass -m.")
        name = self.name
        return Choice(model=chosen, build=lambda: client(name, connection, chosen))

    def default_model(self, config: IronHiveConfig) -> str | None:
        """The configured model (Azure: the deployment; local inference: the model file a run loads)."""
        if self.default is not None:
            return self.default(config)
        return self.connect(config).model if self.connect is not None else None

    def model_lister(self, config: IronHiveConfig, *, home: Path, timeout: float) -> ModelLister | None:
        """What asks it for its models (the SDK is imported now), or ``None`` when there is nothing to ask."""
        if self.local_lister is not None:
            return self.local_lister(config, home)
        if self.connect is None or self.lister is None:
            return None
        return self.lister(self.name, self.connect(config), timeout)

    def model_endpoint(self, config: IronHiveConfig, environ: Mapping[str, str]) -> ModelEndpoint | None:
        """Where doctor asks it for its models, or ``None`` for in-process providers."""
        if self.connect is None or self.probe is None:
            return None
        return self.probe(self, self.connect(config), environ)

    def _remote(self, config: IronHiveConfig) -> tuple[Connection, WireClient]:
        if self.connect is None or self.client is None:
            raise ConfigurationError(f"Provider '{self.name}' declares neither a connection nor a choice")
        return self.connect(config), self.client


def keyed_connection(section: str) -> Callable[[IronHiveConfig], Connection]:
    """Reads the connection of a provider whose section holds ``apiKey``, ``model`` and ``endpoint`` (its base URL).

    Args:
        section: The config.yaml section (``anthropic``, ``googleai``, ``xai``).
    """

    def connect(config: IronHiveConfig) -> Connection:
        values = getattr(config, _attribute(section))
        return Connection(api_key=values.api_key or "", base_url=values.endpoint, model=values.model)

    return connect


def _attribute(section: str) -> str:
    """The Python attribute of a config.yaml section (``gpuStack`` → ``gpu_stack``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", section).lower()
