"""Fixtures the end-to-end tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """An empty working directory ``work/`` beside an empty ``home/`` (tests needing a richer project override it)."""
    path = tmp_path / "work"
    path.mkdir()
    (tmp_path / "home").mkdir()
    return path
