"""The result of ``ironhive doctor``: checks with a status and a hint each, the fixes applied, and their summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from ironhive.adapters.config.masking import mask_urls

CheckStatus: TypeAlias = Literal["pass", "warning", "error"]

CONFIGURATION = "Configuration"
PROVIDERS = "Providers"
CONNECTIVITY = "Connectivity"
MCP = "MCP"
ENVIRONMENT = "Environment"
CATEGORIES = (CONFIGURATION, PROVIDERS, CONNECTIVITY, MCP, ENVIRONMENT)
"""The categories in the order they are shown."""

STATUSES: tuple[CheckStatus, ...] = ("pass", "warning", "error")


@dataclass(frozen=True, kw_only=True, slots=True)
class Check:
    """One finding of ``doctor``.

    Attributes:
        category: One of :data:`CATEGORIES`.
        name: What was checked (``Global config file``, ``openai``, ...).
        status: ``pass``, ``warning`` or ``error``.
        message: What was found; never holds an API key.
        hint: What to do about it (or, for a pass, an optional suggestion).
    """

    category: str
    name: str
    status: CheckStatus
    message: str
    hint: str | None = None

    def to_json(self) -> dict[str, str | None]:
        """The check as the ``--json`` output writes it."""
        return {
            "category": self.category,
            "name": self.name,
            "status": self.status,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class DoctorReport:
    """Every check of one ``doctor`` run and the fixes ``--fix`` applied before the checks ran.

    Attributes:
        checks: The checks, grouped by category in :data:`CATEGORIES` order.
        fixes: One sentence per change made.
    """

    checks: tuple[Check, ...]
    fixes: tuple[str, ...] = ()

    @classmethod
    def of(cls, checks: Sequence[Check], fixes: Sequence[str] = ()) -> DoctorReport:
        """A report with ``checks`` ordered by category (stable within one), credentials in URLs masked."""
        order = {category: index for index, category in enumerate(CATEGORIES)}
        ordered = sorted(checks, key=lambda check: order.get(check.category, len(order)))
        # An endpoint a check names may carry user:password@ or ?api-key=: one place masks them for every check.
        masked = [
            replace(check, message=mask_urls(check.message), hint=None if check.hint is None else mask_urls(check.hint))
            for check in ordered
        ]
        return cls(checks=tuple(masked), fixes=tuple(mask_urls(fix) for fix in fixes))

    @property
    def summary(self) -> dict[str, int]:
        """How many checks have each status (every status present, zeros included)."""
        counts = Counter(check.status for check in self.checks)
        return {status: counts.get(status, 0) for status in STATUSES}

    @property
    def failed(self) -> bool:
        """Whether any check is an error (``doctor`` then exits 1)."""
        return any(check.status == "error" for check in self.checks)

    def to_json(self) -> dict[str, object]:
        """``{"checks": [...], "summary": {"pass", "warning", "error"}, "fixes": [...]}``."""
        return {
            "checks": [check.to_json() for check in self.checks],
            "summary": self.summary,
            "fixes": list(self.fixes),
        }


def human_size(size: int) -> str:
    """``91.2 MB``-style sizes in decimal units, as disk tools show them."""
    if size < 1000:
        return f"{size} B"
    value = size / 1000
    for unit in ("KB", "MB"):
        if value < 1000:
            return f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"
