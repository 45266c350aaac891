"""What tests need beyond ``pip install`` (a browser, bubblewrap, Node.js, npm packages): skip or, in CI, fail.

The suite never installs system or npm packages itself (``.ci/run`` does, and a test must not reach the network):
a test whose component is missing is skipped with the command that installs it, and fails where ``CI`` is set, so CI
cannot pass by skipping what it was meant to run.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from ironhive.adapters.tools.sandbox import SandboxProbe

Test = TypeVar("Test", bound=Callable[..., Any])

Probe = Callable[[], str | None]
"""Why a component is missing (``None`` when it is there)."""


def in_ci() -> bool:
    """Whether the suite runs in CI (``CI`` set, as CI services and ``.ci/run`` do), where nothing may be missing."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


@dataclass(frozen=True, slots=True)
class Component:
    """Something a test needs that ``pip install`` does not bring, and how to install it.

    Attributes:
        name: What the component is, as a reader knows it ("Chromium").
        install: The command that installs it (CI's ``.ci/run`` runs it).
        probe: Why it is missing, or ``None`` when it is there.
        unusable: Why the installed component cannot run here (a skip even in CI: no install fixes a kernel without
            user namespaces), or ``None`` when it can.
    """

    name: str
    install: str
    probe: Probe
    unusable: Probe | None = None

    def problem(self) -> tuple[str, bool] | None:
        """What stops a test that needs it (the message, and whether installing fixes it), or ``None``."""
        missing = self.probe()
        if missing is not None:
            return f"missing {self.name} ({missing}); install with: {self.install}", True
        if self.unusable is not None and (reason := self.unusable()) is not None:
            return reason, False
        return None

    def require(self) -> None:
        """Skip the running test when the component is missing; fail it instead where ``CI`` is set."""
        found = self.problem()
        if found is None:
            return
        message, installable = found
        if installable and in_ci():
            pytest.fail(f"{message} (CI is set, so a missing component is a failure)", pytrace=False)
        pytest.skip(message)

    def __call__(self, test: Test) -> Test:
        """Decorate a test that needs the component: skipped (at setup, as ``skipif`` would) when it is missing, or,
        where ``CI`` is set and an install would bring it, failed without running."""
        found = self.problem()
        if found is None:
            return test
        message, installable = found
        if not (installable and in_ci()):
            return pytest.mark.skip(reason=message)(test)
        failure = f"{message} (CI is set, so a missing component is a failure)"
        if inspect.iscoroutinefunction(test):

            @functools.wraps(test)
            async def failing_async(*args: Any, **kwargs: Any) -> Any:
                pytest.fail(failure, pytrace=False)

            return failing_async  # type: ignore[return-value]

        @functools.wraps(test)
        def failing(*args: Any, **kwargs: Any) -> Any:
            pytest.fail(failure, pytrace=False)

        return failing  # type: ignore[return-value]

    def autouse(self) -> Any:
        """A module-scoped autouse fixture that requires the component for every test of the module that assigns it
        (``_git = GIT.autouse()``): the module-wide form of the decorator."""
        slug = "".join(character if character.isalnum() else "_" for character in self.name.lower())

        @pytest.fixture(scope="module", autouse=True, name=f"requires_{slug}")
        def requirement() -> None:
            self.require()

        return requirement


def require_component(name: str, probe: Probe, install: str) -> None:
    """:meth:`Component.require` for a one-off component."""
    Component(name=name, install=install, probe=probe).require()


def _on_path(*programs: str) -> Probe:
    def probe() -> str | None:
        absent = [program for program in programs if shutil.which(program) is None]
        return f"no {' or '.join(absent)} on PATH" if absent else None

    return probe


def _node_version() -> str | None:
    missing = _on_path("node", "npm")()
    if missing is not None:
        return missing
    try:
        done = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"node --version failed: {error}"
    version = done.stdout.strip().lstrip("v").split(".")
    try:
        major, minor = int(version[0]), int(version[1])
    except (IndexError, ValueError):
        return f"node --version printed {done.stdout.strip()!r}"
    return None if (major, minor) >= (20, 9) else f"node {done.stdout.strip()} is older than 20.9"


NODE = Component(
    name="Node.js 20.9+ with npm",
    install="apt-get install nodejs npm (Debian 13; on Debian 12 NodeSource's nodejs 20+ package)",
    probe=_node_version,
)

GIT = Component(name="git", install="apt-get install --no-install-recommends git", probe=_on_path("git"))

CHROMIUM_PATH = Path("/usr/bin/chromium")

CHROMIUM = Component(
    name="Chromium",
    install="apt-get install --no-install-recommends chromium",
    probe=lambda: None if os.access(CHROMIUM_PATH, os.X_OK) else f"no {CHROMIUM_PATH}",
)


def bubblewrap(probe: SandboxProbe) -> Component:
    """bubblewrap for the command sandbox: missing when ``bwrap`` is not on PATH (on Linux); where it is installed but
    cannot sandbox (no user namespaces, another OS), the sandbox probe's reason skips the test, in CI too."""

    def missing() -> str | None:
        if not sys.platform.startswith("linux"):
            return None  # Linux-only: elsewhere the probe's reason says so, and no install helps
        return _on_path("bwrap")()

    return Component(
        name="bubblewrap",
        install="apt-get install --no-install-recommends bubblewrap",
        probe=missing,
        unusable=lambda: None if probe.available else f"no command sandbox here: {probe.reason}",
    )


def npm_packages(name: str, folder: Path, packages: dict[str, str]) -> Component:
    """npm packages (``package: version``) installed under ``folder/node_modules`` for ``node`` to run."""
    specs = " ".join(f"{package}@{version}" for package, version in packages.items())

    def missing() -> str | None:
        if (no_node := _on_path("node")()) is not None:
            return no_node
        wrong = []
        for package, version in packages.items():
            manifest = folder / "node_modules" / package / "package.json"
            try:
                installed = json.loads(manifest.read_text(encoding="utf-8")).get("version")
            except (OSError, ValueError):
                installed = None
            if installed != version:
                wrong.append(f"{package}@{version}" + (f" (found {installed})" if installed else ""))
        return f"not installed in {folder}: {', '.join(wrong)}" if wrong else None

    install = f"npm install --prefix {folder} --no-audit --no-fund {specs}"
    return Component(name=name, install=install, probe=missing)


MCP_NPM_PACKAGES = {
    "@modelcontextprotocol/server-memory": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
}
"""The npm MCP reference servers the tests run, pinned (``.ci/run`` installs these versions)."""

MCP_NPM_PREFIX = Path(
    os.environ.get("IRONHIVE_TEST_NPM_PREFIX", Path(__file__).resolve().parents[2] / "tests/artifacts/npm-mcp-servers")
)
"""Where they are installed (``node_modules`` below it)."""

MCP_NPM_SERVERS = npm_packages("the npm MCP reference servers", MCP_NPM_PREFIX, MCP_NPM_PACKAGES)


def npm_lock_installed(name: str, folder: Path, install: str) -> Component:
    """The packages of ``folder/package-lock.json`` installed in ``folder/node_modules`` at the locked versions.

    Compares the lock with npm's record of what it installed (``node_modules/.package-lock.json``); optional
    packages for other platforms are never installed, so an absent optional one is fine.
    """

    def missing() -> str | None:
        try:
            lock = json.loads((folder / "package-lock.json").read_text(encoding="utf-8"))["packages"]
        except (OSError, ValueError, KeyError) as error:
            return f"cannot read {folder / 'package-lock.json'}: {error}"
        try:
            installed = json.loads((folder / "node_modules" / ".package-lock.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return f"no {folder / 'node_modules'}"
        present = installed.get("packages", {})
        stale = [
            key.removeprefix("node_modules/")
            for key, entry in lock.items()
            if key
            and not (entry.get("optional") and key not in present)
            and present.get(key, {}).get("version") != entry.get("version")
        ]
        if stale:
            shown = ", ".join(stale[:5]) + (f" and {len(stale) - 5} more" if len(stale) > 5 else "")
            return f"node_modules does not match package-lock.json: {shown}"
        return None

    return Component(name=name, install=install, probe=missing)


REDIS = Component(
    name="redis-server",
    install="apt-get install --no-install-recommends redis-server",
    probe=_on_path("redis-server"),
)
