"""The ``set``, ``get``, ``unset`` and ``config`` commands (the global config file and the merged configuration).

Only cyclopts is imported at module level: pydantic and PyYAML load inside the commands, so ``ironhive --help`` stays
light.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Literal

from cyclopts import App, Parameter

SET_HELP = """Set a value in the global config file (~/.ironhive/config.yaml).

Example: `ironhive set openai.apiKey sk-...` (the file gets owner-only permissions). Keys are dotted; each part is
normalised (api_key and ApiKey become apiKey, OpenAI becomes openai). Values: true/false become booleans, whole
numbers integers, decimals floats, anything else text (keys that hold text keep it as typed).

Known keys:

- openai: apiKey, model, endpoint
- anthropic: apiKey, model
- googleai: apiKey, model
- xai: apiKey, model, endpoint
- azureopenai: endpoint, apiKey, deploymentName
- gpuStack: endpoint, apiKey, model, embeddingModel, rerankModel
- ollama: enabled, endpoint, model
- lmstudio: enabled, endpoint, model
- lmsupply: enabled, embedderModel, rerankerModel, generatorModel, maxContextLength, modelPath, huggingFaceRepo,
  huggingFaceFile
- providers: chain, maxRetries, initialBackoffSeconds
- the sections compaction, chatBehavior, advisor, skills, webSearch, deepResearch and approval (see the README)"""


def set_command(
    key: Annotated[str, Parameter(name="KEY", help="Dotted key, e.g. openai.apiKey.")],
    value: Annotated[str, Parameter(name="VALUE", help="The value.", allow_leading_hyphen=True)],
) -> int:
    """Set a value in the global config file."""
    from ironhive.adapters.config.writer import display_value, is_known_key, set_value, value_problem
    from ironhive.domain.errors import ConfigurationError

    _secure_user_directory()
    try:
        written_key, written = set_value(Path.home(), key, value)
    except ConfigurationError as error:
        return _fail(str(error))
    problem = value_problem(written_key, written)
    if not is_known_key(written_key):
        sys.stderr.write(f"Warning: '{written_key}' is not a known config key; loading will ignore it.\n")
    elif problem is not None:
        sys.stderr.write(f"Warning: invalid value for '{written_key}' ({problem}); loading will ignore it.\n")
    sys.stdout.write(f"Set {written_key} = {display_value(written_key, written)}\n")
    return 0


def get_command(
    key: Annotated[str | None, Parameter(name="KEY", help="Dotted key; all keys when omitted.")] = None,
    *,
    raw: Annotated[bool, Parameter(help="Print the value unmasked and unformatted (key=value lines for all).")] = False,
) -> int:
    """Get a value from the global config file (all values without a key)."""
    from ironhive.adapters.config.files import global_config_path
    from ironhive.adapters.config.writer import display_value, flatten, get_value, read_global
    from ironhive.domain.errors import ConfigurationError

    home = Path.home()
    _secure_user_directory()
    try:
        if key is None:
            entries = flatten(read_global(home))
            if not entries and not raw:
                sys.stdout.write(f"No configuration values set in {global_config_path(home)}\n")
        else:
            found_key, value = get_value(home, key)
            if not isinstance(value, dict) or not value:
                sys.stdout.write(display_value(found_key, value, raw=raw) + "\n")
                return 0
            entries = flatten(value, found_key)
    except KeyError as missing:
        if not raw:
            sys.stderr.write(f"Key not found: {missing.args[0]}\n")
        return 1
    except ConfigurationError as error:
        return _fail(str(error))
    separator = "=" if raw else " = "
    for dotted, item in entries.items():
        sys.stdout.write(f"{dotted}{separator}{display_value(dotted, item, raw=raw)}\n")
    return 0


def unset_command(key: Annotated[str, Parameter(name="KEY", help="Dotted key, e.g. openai.apiKey.")]) -> int:
    """Remove a value from the global config file."""
    from ironhive.adapters.config.writer import unset_value
    from ironhive.domain.errors import ConfigurationError

    _secure_user_directory()
    try:
        removed_key, removed = unset_value(Path.home(), key)
    except ConfigurationError as error:
        return _fail(str(error))
    sys.stdout.write(f"Removed {removed_key}\n" if removed else f"Key not found: {removed_key}\n")
    return 0


def config_command(
    action: Annotated[
        Literal["show", "path"], Parameter(name="ACTION", help="show (default): the merged configuration; path: files.")
    ] = "show",
) -> int:
    """Show all configuration, or the config file path (another ACTION is a usage error, exit 2)."""
    return _show() if action == "show" else _path()


def register(app: App) -> None:
    """Add ``set``, ``get``, ``unset`` and ``config`` to the CLI application.

    Args:
        app: The ``ironhive`` cyclopts application.
    """
    app.command(set_command, name="set", help=SET_HELP)
    app.command(get_command, name="get")
    app.command(unset_command, name="unset")
    app.command(config_command, name="config")


def _show() -> int:
    from ironhive.adapters.config.loader import load_config
    from ironhive.adapters.config.masking import is_secret_name
    from ironhive.adapters.config.writer import display_value, flatten
    from ironhive.domain.errors import ConfigurationError

    _secure_user_directory()
    try:
        loaded = load_config(home=Path.home(), project=Path.cwd(), environ=os.environ)
    except ConfigurationError as error:
        return _fail(str(error))
    for notice in loaded.notices:
        sys.stderr.write(f"{notice}\n")
    for warning in loaded.warnings:
        sys.stderr.write(f"Warning: {warning}\n")
    effective = flatten(loaded.config.model_dump(by_alias=True))
    for dotted, value in effective.items():
        if is_secret_name(dotted):
            shown = "(set)" if value else "(not set)"
        else:
            shown = "(not set)" if value is None else display_value(dotted, value)
        sys.stdout.write(f"{dotted} = {shown}\n")
    return 0


def _path() -> int:
    from ironhive.adapters.config.files import global_config_path, project_config_path

    global_file = global_config_path(Path.home())
    project_file = project_config_path(Path.cwd())
    sys.stdout.write(
        f"Global config:  {global_file}\n"
        f"Directory:      {global_file.parent}\n"
        f"Exists:         {_yes_no(global_file.is_file())}\n"
        f"Project config: {project_file}\n"
        f"Exists:         {_yes_no(project_file.is_file())}\n"
    )
    return 0


def _secure_user_directory() -> None:
    from ironhive.adapters.config.private_files import secure_user_directory

    secure_user_directory(Path.home())


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def _fail(message: str) -> int:
    sys.stderr.write(f"Error: {message}\n")
    return 1
