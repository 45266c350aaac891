"""The session config options an ACP session offers: its mode and its model (``provider/model``), and their values."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acp.schema import SessionConfigOptionSelect, SessionConfigSelectOption, SessionMode

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig

MODE_OPTION = "mode"
MODEL_OPTION = "model"
LIST_TIMEOUT_SECONDS = 10.0
"""How long one provider's model listing may take (the listing runs after the session is open)."""


@dataclass(frozen=True, slots=True, order=True)
class ModelValue:
    """A model a session may switch to: a canonical provider name and a model of it.

    Attributes:
        provider: The canonical provider name.
        model: The model name as the provider takes it.
    """

    provider: str
    model: str

    @property
    def value(self) -> str:
        """The option value: ``provider/model`` (a model name may itself hold ``/``; the provider never does)."""
        return f"{self.provider}/{self.model}"


def mode_option(modes: Sequence[SessionMode], current: str) -> SessionConfigOptionSelect:
    """The ``mode`` option (the same modes as ``session/set_mode``; clients that read config options use this)."""
    return SessionConfigOptionSelect(
        id=MODE_OPTION,
        name="Mode",
        category="mode",
        type="select",
        current_value=current,
        options=[
            SessionConfigSelectOption(value=mode.id, name=mode.name, description=mode.description) for mode in modes
        ],
    )


def model_option(models: Sequence[ModelValue], current: ModelValue) -> SessionConfigOptionSelect:
    """The ``model`` option: every model the session may use, the current one first."""
    return SessionConfigOptionSelect(
        id=MODEL_OPTION,
        name="Model",
        description="The model of the next turns (the failover chain follows it, as with ironhive -m).",
        category="model",
        type="select",
        current_value=current.value,
        options=[
            SessionConfigSelectOption(value=model.value, name=model.value, description=f"provider {model.provider}")
            for model in merged([current], models)
        ],
    )


def merged(first: Iterable[ModelValue], *more: Iterable[ModelValue]) -> list[ModelValue]:
    """The models of every list in order, each once (case and ``:latest`` aside, as ``ironhive models`` compares)."""
    seen: set[tuple[str, str]] = set()
    result: list[ModelValue] = []
    for models in (first, *more):
        for model in models:
            key = (model.provider, model.model.strip().casefold().removesuffix(":latest"))
            if key not in seen:
                seen.add(key)
                result.append(model)
    return result


def find_value(models: Sequence[ModelValue], value: str) -> ModelValue | None:
    """The offered model whose option value is exactly ``value``, or None."""
    return next((model for model in models if model.value == value), None)


def offline_models(chain: Iterable[tuple[str, str]], config: IronHiveConfig) -> list[ModelValue]:
    """The models known without asking any provider: the failover chain's, then every configured provider's own.

    Args:
        chain: The session's ``(provider, model)`` failover chain, selected first.
        config: The merged configuration.
    """
    from ironhive.adapters.provider_registry import SPECS
    from ironhive.domain.errors import ConfigurationError

    configured = []
    for spec in SPECS:
        try:
            default = spec.default_model(config) if spec.listed and spec.is_configured(config) else None
        except ConfigurationError:  # a provider set up wrongly is left out; the session's own chain still stands
            continue
        if default:
            configured.append(ModelValue(spec.name, default))
    return merged((ModelValue(name, model) for name, model in chain if model), configured)


async def listed_models(config: IronHiveConfig, *, home: Path) -> list[ModelValue]:
    """Every configured provider's models as ``ironhive models`` lists them (the provider's API, else the built-in
    catalog's entries of its vendor, else its configured model); a provider that cannot be asked adds no error."""
    from ironhive.adapters.provider_registry import SPECS
    from ironhive.domain.errors import ConfigurationError
    from ironhive.domain.model_listing import ListingRequest, list_models

    requests = []
    for spec in SPECS:
        if not (spec.listed and spec.is_configured(config)):
            continue
        try:
            default = spec.default_model(config)
        except ConfigurationError:
            continue
        try:
            lister = spec.model_lister(config, home=home, timeout=LIST_TIMEOUT_SECONDS)
        except ConfigurationError:  # as ironhive models: the built-in catalog's entries and the configured model
            lister = None
        requests.append(ListingRequest(provider=spec.name, lister=lister, default_model=default))
    listings = await list_models(requests)
    return [ModelValue(model.provider, model.model_id) for listing in listings for model in listing.models]
