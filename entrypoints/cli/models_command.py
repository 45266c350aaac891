"""The ``ironhive models [-p PROVIDER] [--json]`` command: the models of every configured provider.

Only cyclopts is imported at module level; the configuration, the listing and each provider's SDK load inside the
command, and an SDK only when its provider is configured.

``--json`` writes ``source`` as the lowercase text ``api``, ``cached`` or ``static``, where the original wrote a number
(0, 1, 2).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from cyclopts import App, Parameter

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.domain.model_listing import ListingRequest, ProviderListing
    from ironhive.ports.models import ListedModel

LIST_TIMEOUT_SECONDS = 10.0
"""How long one provider's listing may take."""

_HEADERS = ("Model ID", "Display Name", "Context", "Input $/M", "Output $/M", "Source", "Default")
_NUMERIC = frozenset({"Context", "Input $/M", "Output $/M"})
_NOTHING_CONFIGURED = (
    "No provider is configured. Configure one (for example OPENAI_API_KEY and OPENAI_MODEL, or `ironhive set "
    'openai.apiKey …`), or install local inference with: pip install "ironhive[local]".'
)


def register(app: App) -> None:
    """Add the ``models`` command to ``app``."""
    app.command(models, name="models")


def models(
    *words: Annotated[str, Parameter(show=False, allow_leading_hyphen=False)],
    provider: Annotated[
        str | None, Parameter(name=["-p", "--provider"], help="List only this provider (aliases: claude, gemini, …).")
    ] = None,
    as_json: Annotated[bool, Parameter(name="--json", help="Output a JSON array.")] = False,
) -> int:
    """List available models from configured providers (-p/--provider, --json)."""
    import asyncio

    from ironhive.adapters.config.loader import load_config
    from ironhive.domain.errors import ConfigurationError
    from ironhive.domain.model_listing import list_models

    if words:
        return _unexpected(words)
    try:
        loaded = load_config(home=Path.home(), project=Path.cwd(), environ=os.environ)
        for line in (*loaded.notices, *loaded.warnings):
            sys.stderr.write(f"{line}\n")
        names = providers_to_list(provider, loaded.config)
    except ConfigurationError as error:
        sys.stderr.write(f"Error: {error}\n")
        return 1
    requests = [listing_request(name, loaded.config, home=Path.home()) for name in names]
    listings = asyncio.run(list_models(requests))
    for listing in listings:
        if listing.error:
            sys.stderr.write(_failure_note(listing))
    found = [model for listing in listings for model in listing.models]
    if as_json:
        sys.stdout.write(json.dumps([model_json(model) for model in found], indent=2, ensure_ascii=False) + "\n")
    elif not found:
        sys.stdout.write("No models found.\n")
    elif sys.stdout.isatty():
        _print_rich_tables(listings)
    else:
        sys.stdout.write(plain_tables(listings))
    if not names:
        sys.stderr.write(_NOTHING_CONFIGURED + "\n")
    return 0


def _unexpected(words: Sequence[str]) -> int:
    """``ironhive models WORD``: an error naming ``-p WORD`` when the word is a provider (exit 2)."""
    import shlex

    from ironhive.adapters.provider_registry import find
    from ironhive.cli.unexpected_arguments import EXIT_USAGE, unexpected_arguments

    name = shlex.quote(words[0]) if find(words[0]) is not None else "PROVIDER"
    hint = f'To list one provider\'s models: "ironhive models -p {name}".'
    sys.stderr.write(f"Error: {unexpected_arguments(['models'], words, ['--provider', '--json'], hint)}\n")
    return EXIT_USAGE


def providers_to_list(provider: str | None, config: IronHiveConfig) -> list[str]:
    """The providers to list: the one named (aliases allowed), else every configured one in registry order.

    Raises:
        ConfigurationError: The named provider is unknown, or known but not configured.
    """
    from ironhive.adapters.provider_registry import SPECS, spec_of
    from ironhive.domain.errors import ConfigurationError

    if provider is None:
        return [spec.name for spec in SPECS if spec.listed and spec.is_configured(config)]
    spec = spec_of(provider)
    if not spec.is_configured(config):
        raise ConfigurationError(f"Provider '{provider}' is not available or configured.")
    return [spec.name]


def listing_request(name: str, config: IronHiveConfig, *, home: Path) -> ListingRequest:
    """What to list for one configured provider: its lister (SDK imported now) and its configured model."""
    from ironhive.adapters.provider_registry import spec_of
    from ironhive.domain.errors import ConfigurationError
    from ironhive.domain.model_listing import ListingRequest

    spec = spec_of(name)
    default = spec.default_model(config)
    try:
        lister = spec.model_lister(config, home=home, timeout=LIST_TIMEOUT_SECONDS)
    except ConfigurationError as error:
        sys.stderr.write(f"Warning: cannot list the models of {name}: {error}\n")
        lister = None
    return ListingRequest(provider=name, lister=lister, default_model=default)


def _failure_note(listing: ProviderListing) -> str:
    from ironhive.domain.model_listing import STATIC_FAMILIES

    note = f"Warning: could not list the models of {listing.provider}: {listing.error}"
    if listing.models:
        instead = "the built-in catalog" if listing.provider in STATIC_FAMILIES else "the configured model"
        note += f"; showing {instead} instead"
    return note + "\n"


def model_json(model: ListedModel) -> dict[str, object]:
    """The camelCase ``--json`` object of one model, nulls written; ``source`` as its lowercase name."""
    return {
        "modelId": model.model_id,
        "provider": model.provider,
        "displayName": model.display_name,
        "contextWindow": model.context_window,
        "inputPricePerMillion": model.input_price_per_million,
        "outputPricePerMillion": model.output_price_per_million,
        "source": model.source,
        "isDefault": model.is_default,
        "localPath": str(model.local_path) if model.local_path is not None else None,
        "sizeBytes": model.size_bytes,
    }


def format_context(tokens: int | None) -> str:
    """A context window as ``128K`` or ``1M`` (``2.1M``); ``-`` when unknown."""
    if tokens is None:
        return "-"
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}".removesuffix(".0") + "M"
    if tokens >= 1000:
        return f"{round(tokens / 1000)}K"
    return str(tokens)


def format_price(price: float | None) -> str:
    """A price per million tokens as ``$2.50`` (``$0.075`` keeps its third decimal); ``-`` when unknown."""
    if price is None:
        return "-"
    if round(price, 2) == price:
        return f"${price:,.2f}"
    return f"${price:,.4f}".rstrip("0")


def table_rows(models: Sequence[ListedModel], *, default_mark: str = "yes") -> list[tuple[str, ...]]:
    """The text cells of one provider's table."""
    return [
        (
            model.model_id,
            model.display_name or "-",
            format_context(model.context_window),
            format_price(model.input_price_per_million),
            format_price(model.output_price_per_million),
            model.source,
            default_mark if model.is_default else "",
        )
        for model in models
    ]


def plain_tables(listings: Sequence[ProviderListing]) -> str:
    """Each provider's models as an aligned plain-text table under its name (for pipes and files)."""
    groups = [(listing.provider, table_rows(listing.models)) for listing in listings if listing.models]
    every_row = [_HEADERS, *(row for _, rows in groups for row in rows)]
    widths = [max(len(row[column]) for row in every_row) for column in range(len(_HEADERS))]

    def line(row: Sequence[str]) -> str:
        cells = (
            cell.rjust(width) if header in _NUMERIC else cell.ljust(width)
            for cell, width, header in zip(row, widths, _HEADERS, strict=True)
        )
        return "  ".join(cells).rstrip()

    blocks = ["\n".join([provider, line(_HEADERS), *(line(row) for row in rows)]) for provider, rows in groups]
    return "\n\n".join(blocks) + "\n"


def _print_rich_tables(listings: Sequence[ProviderListing]) -> None:
    from rich.table import Table
    from rich.text import Text

    from ironhive.cli.render import rich_console

    console = rich_console()  # no escape sequences under NO_COLOR or --plain, the table's layout kept
    for listing in listings:
        if not listing.models:
            continue
        table = Table(title=listing.provider, title_justify="left")
        for header in _HEADERS:
            table.add_column(header, justify="right" if header in _NUMERIC else "left")
        for row in table_rows(listing.models, default_mark="✓"):
            table.add_row(*(Text(cell) for cell in row))  # Text: a "[" in a model id is not rich markup
        console.print(table)
