"""Where MCP plugin files are: the project's candidates and the user's own, found without parsing them."""

from __future__ import annotations

from pathlib import Path

PROJECT_PLUGIN_FILES = (
    ".ironhive/plugins.yaml",
    ".ironhive/plugins.yml",
    ".ironhive/plugins.json",
    "plugins.yaml",
    "plugins.yml",
    "plugins.json",
)
"""Where a project's plugin file may be, relative to the project directory; the first that exists is used."""


def global_plugin_file(home: Path) -> Path:
    """The user's own plugin file, ``~/.ironhive/plugins.yaml``."""
    return home / ".ironhive" / "plugins.yaml"


def find_project_plugin_file(project_dir: Path) -> Path | None:
    """The first of ``PROJECT_PLUGIN_FILES`` that exists in ``project_dir``, as an absolute path, or ``None``."""
    for relative in PROJECT_PLUGIN_FILES:
        candidate = project_dir / relative
        if candidate.exists():
            return candidate.absolute()
    return None


def plugin_file_exists(project_dir: Path, home: Path) -> bool:
    """Whether a plugin file would be read for ``project_dir``: the user's own or one of the project's.

    When this is ``False`` there is no MCP server to start, so a run need not import the MCP adapter (or its SDK).
    """
    return global_plugin_file(home).exists() or find_project_plugin_file(project_dir) is not None
