"""Finds how ironhive was installed (pipx, a uv tool, uv pip, or pip) and the command that upgrades it there."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal, TypeAlias

from ironhive.adapters.diagnostics.releases import DISTRIBUTION, PackageIndex
from ironhive.domain.errors import ConfigurationError

Installer: TypeAlias = Literal["pipx", "uv-tool", "uv", "pip"]

PIPX_MARKER = "pipx_metadata.json"
"""pipx writes this file into the root of every environment it manages."""
UV_TOOL_MARKER = "uv-receipt.toml"
"""``uv tool install`` writes this file into the root of the tool's environment."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Installation:
    """How and where ironhive is installed.

    Attributes:
        installer: ``pipx``, ``uv-tool`` (``uv tool install``), ``uv`` (``uv pip install``) or ``pip``.
        prefix: The environment's root (``sys.prefix``).
        editable_source: The source directory of an editable (development) install, else ``None``.
    """

    installer: Installer
    prefix: Path
    editable_source: str | None = None


def detect_installation(prefix: Path | None = None) -> Installation:
    """How the running ironhive was installed: the environment's marker files, then the dist-info ``INSTALLER`` file.

    Args:
        prefix: The environment's root (``sys.prefix`` when omitted).

    Returns:
        The installation.
    """
    root = Path(sys.prefix) if prefix is None else prefix
    try:
        distribution = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return classify(root, installer=None, direct_url=None)
    return classify(
        root, installer=distribution.read_text("INSTALLER"), direct_url=distribution.read_text("direct_url.json")
    )


def classify(prefix: Path, *, installer: str | None, direct_url: str | None) -> Installation:
    """Decide the installer from the environment's marker files and the dist-info's ``INSTALLER``/``direct_url.json``.

    pipx installs with pip, so its marker file wins over ``INSTALLER``; a uv tool environment has its own marker;
    otherwise ``INSTALLER`` says ``uv`` or (anything else) pip.

    Args:
        prefix: The environment's root.
        installer: The text of the dist-info's ``INSTALLER`` file, if any.
        direct_url: The text of the dist-info's ``direct_url.json`` (PEP 610), if any.

    Returns:
        The installation.
    """
    editable = _editable_source(direct_url)
    if (prefix / PIPX_MARKER).is_file():
        return Installation(installer="pipx", prefix=prefix, editable_source=editable)
    if (prefix / UV_TOOL_MARKER).is_file():
        return Installation(installer="uv-tool", prefix=prefix, editable_source=editable)
    kind: Installer = "uv" if (installer or "").strip().lower() == "uv" else "pip"
    return Installation(installer=kind, prefix=prefix, editable_source=editable)


def upgrade_command(
    installation: Installation,
    version: str,
    index: PackageIndex,
    *,
    python: str | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> list[str]:
    """The command that upgrades ironhive to ``version`` with the installer that installed it.

    pip and uv pip install exactly ``version``; pipx and uv tools upgrade to their newest. With an explicit index
    (``--index-url``) the installer reads that index too; otherwise its own configuration applies.

    Args:
        installation: From :func:`detect_installation`.
        version: The release to install.
        index: The index the release was found on.
        python: The interpreter of the environment (``sys.executable`` when omitted).
        which: Finds an executable on PATH.

    Returns:
        The command's arguments.

    Raises:
        ConfigurationError: The installer (pipx or uv) is not on PATH.
    """
    interpreter = python or sys.executable
    extra = ["--index-url", index.simple_url] if index.explicit else []
    match installation.installer:
        case "pipx":
            pip_args = [f"--pip-args=--index-url {index.simple_url}"] if index.explicit else []
            return [_tool("pipx", which), "upgrade", *pip_args, DISTRIBUTION]
        case "uv-tool":
            return [_tool("uv", which), "tool", "upgrade", *extra, DISTRIBUTION]
        case "uv":
            requirement = f"{DISTRIBUTION}=={version}"
            return [_tool("uv", which), "pip", "install", "--python", interpreter, "--upgrade", *extra, requirement]
    return [interpreter, "-m", "pip", "install", "--upgrade", *extra, f"{DISTRIBUTION}=={version}"]


def _tool(name: str, which: Callable[[str], str | None]) -> str:
    found = which(name)
    if found is None:
        raise ConfigurationError(f"ironhive was installed with {name}, but {name} is not on PATH; upgrade it by hand")
    return found


def _editable_source(direct_url: str | None) -> str | None:
    if not direct_url:
        return None
    try:
        document = json.loads(direct_url)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    dir_info = document.get("dir_info")
    if isinstance(dir_info, dict) and dir_info.get("editable") is True:
        url = document.get("url")
        return str(url).removeprefix("file://") if url else ""
    return None
