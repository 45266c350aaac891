"""ironhive: a universal agent host — the composition root (container, CLI, server start-up)."""

from __future__ import annotations

# Not ``typing.TYPE_CHECKING``: importing typing would double the cost of ``ironhive --version``.
TYPE_CHECKING = False

__version__ = "0.1.0"

if TYPE_CHECKING:
    from ironhive.container import IronHiveContainer

__all__ = ["IronHiveContainer", "__version__"]


def __getattr__(name: str) -> object:
    # Lazy exports (PEP 562): importing any ironhive.* module must stay cheap.
    if name == "IronHiveContainer":
        from ironhive.container import IronHiveContainer

        return IronHiveContainer
    raise AttributeError(f"module 'ironhive' has no attribute {name!r}")
