"""``ironhive --help`` and ``--version`` start without importing any provider SDK."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROVIDER_SDKS = ("openai", "anthropic", "google.genai", "llama_cpp", "mcp")


def modules_imported_by(*args: str) -> set[str]:
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ironhive", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
        check=True,
    )
    modules = set()
    for line in completed.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                modules.add(name)
    assert "ironhive" in modules  # the import trace really was read
    return modules


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_no_provider_sdk_is_imported(flag: str) -> None:
    modules = modules_imported_by(flag)
    loaded = sorted(m for m in modules for sdk in PROVIDER_SDKS if m == sdk or m.startswith(sdk + "."))
    assert loaded == []


def test_version_imports_no_cli_framework_either() -> None:
    modules = modules_imported_by("--version")
    assert not {"cyclopts", "rich", "pydantic", "dependency_injector"} & modules
