"""Logging of the CLI and the servers: warnings on stderr, or the level ``IRONHIVE_LOG_LEVEL`` names."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping

LEVEL_VARIABLE = "IRONHIVE_LOG_LEVEL"


def configure_logging(environ: Mapping[str, str]) -> None:
    """Log to stderr at the level ``IRONHIVE_LOG_LEVEL`` names (``debug``, ``info``, …; ``warning`` by default)."""
    name = environ.get(LEVEL_VARIABLE, "").strip().upper()
    level = logging.getLevelNamesMapping().get(name, logging.WARNING) if name else logging.WARNING
    logging.basicConfig(stream=sys.stderr, level=level, format="%(levelname)s %(name)s: %(message)s")
