"""Keeps the CLI from importing optional packages that its libraries probe for and ironhive never uses."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

PROBED = frozenset({"fastapi", "fast_depends", "starlette", "werkzeug", "pydantic_settings"})
"""What ``dependency_injector.containers`` imports, when installed, only for features ironhive does not use.

Its ``wiring`` module imports the first four to support ``@inject`` in those frameworks (FastAPI alone costs about
0.3 s; starlette comes with the MCP SDK), and its ``providers`` module imports ``pydantic_settings`` for
``Configuration.from_pydantic``. ironhive never wires (it resolves explicitly) nor reads pydantic settings, so the CLI
and the servers, which own their process, skip them. The SDK does not: an application may use wiring with FastAPI."""


class _HideProbed:
    """A meta-path finder that makes the probed packages look absent (only while dependency-injector is imported)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """Refuse the probed packages not imported yet; leave every other import to the next finder."""
        package = fullname.partition(".")[0]
        if package in PROBED and package not in sys.modules:
            raise ModuleNotFoundError(f"{fullname} is not imported by the ironhive CLI", name=fullname)
        return None


def import_dependency_injector() -> None:
    """Import ``dependency_injector.containers`` without the optional packages it probes for (``PROBED``).

    Does nothing when its wiring module is already imported (by the application, or earlier in this process). A
    package that is already imported is left alone, so dependency-injector supports it as usual.
    """
    if "dependency_injector.wiring" in sys.modules:
        return
    finder = _HideProbed()
    sys.meta_path.insert(0, finder)
    try:
        importlib.import_module("dependency_injector.containers")
    finally:
        sys.meta_path.remove(finder)


BRIDGES = {"openai._vendor.httpx_aiohttp": "aiohttp"}
"""Optional bridges a library imports at its own import, when the package they bridge to is installed, for a client
ironhive never builds, and that package: the openai SDK imports its aiohttp transport (and aiohttp with it, about
0.1 s) for ``DefaultAioHttpClient``, while ironhive's OpenAI clients use its default httpx client. Hidden only while
that package is not imported yet: once something has imported it, the bridge costs nothing more."""


class _HideBridges:
    """A meta-path finder that makes the :data:`BRIDGES` look absent while their package is not imported."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """Refuse a bridge whose package is not imported; leave every other import to the next finder."""
        for bridge, package in BRIDGES.items():
            if (fullname == bridge or fullname.startswith(bridge + ".")) and package not in sys.modules:
                raise ModuleNotFoundError(f"{fullname} is not imported by the ironhive CLI", name=fullname)
        return None


def hide_unused_bridges() -> None:
    """From now on, in this process (the CLI's own), leave out the :data:`BRIDGES` to packages nothing has imported.
    Calling it again changes nothing."""
    if not any(isinstance(finder, _HideBridges) for finder in sys.meta_path):
        sys.meta_path.insert(0, _HideBridges())
