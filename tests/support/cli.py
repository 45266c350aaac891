"""Runs the real ``ironhive`` console script in a subprocess with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from ironhive.adapters.config.environment import ENVIRONMENT_VARIABLES

PROVIDER_VARIABLES = (
    *ENVIRONMENT_VARIABLES,
    "GOOGLE_API_KEY",
    "HF_ENDPOINT",
    "HF_HUB_OFFLINE",
    "IRONHIVE_TRUST_PROJECT",
)
"""Every variable the configuration reads, so a developer's own settings never leak into a test run."""


def ironhive_executable() -> str:
    """The console script installed beside the running interpreter."""
    script = Path(sys.executable).with_name("ironhive")
    return str(script) if script.exists() else "ironhive"


def clean_environment(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment without provider or Hugging Face settings, with ``HOME`` in a temporary folder."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in PROVIDER_VARIABLES and not key.startswith("HF_")  # a developer's token, cache or endpoint
    }
    environment.update({"HOME": str(home), "NO_COLOR": "1"})
    environment.update(extra or {})
    return environment


def run_ironhive(
    *args: str,
    cwd: Path,
    home: Path,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``ironhive *args`` and return the finished process (stdout and stderr as text)."""
    return subprocess.run(
        [ironhive_executable(), *args],
        cwd=cwd,
        env=clean_environment(home, env),
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
