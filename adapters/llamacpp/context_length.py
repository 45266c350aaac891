"""How large a context window local inference allocates: the original's sizing by total RAM, and reading the RAM."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

_GIB: Final = 1 << 30
# (at least this much RAM, this context); checked from the top. The original (LMSupply) counts whole gigabytes of
# 2**30 bytes, so a "32 GB" machine that reports a little under 32 GiB gets the next size down.
_TIERS: Final = ((32 * _GIB, 131_072), (16 * _GIB, 65_536), (8 * _GIB, 32_768), (4 * _GIB, 16_384))
_SMALLEST: Final = 8192
UNKNOWN_RAM_CONTEXT: Final = 16_384
"""The context chosen when the total RAM cannot be read."""

UNKNOWN_TRAINED_CONTEXT: Final = 8192
"""The auto-sized context's cap when a model file does not state its trained context (the usual guess for unknown
models, as context-size detection makes)."""

_MEMINFO: Final = Path("/proc/meminfo")


def auto_context_length(total_ram_bytes: int | None) -> int:
    """The context length to allocate when ``maxContextLength`` is not set, sized by the machine's total RAM.

    Args:
        total_ram_bytes: The total physical memory, or ``None`` when it could not be read.

    Returns:
        131072 tokens from 32 GiB, 65536 from 16 GiB, 32768 from 8 GiB, 16384 from 4 GiB, else 8192; 16384 when the
        RAM is unknown.
    """
    if total_ram_bytes is None:
        return UNKNOWN_RAM_CONTEXT
    for at_least, context in _TIERS:
        if total_ram_bytes >= at_least:
            return context
    return _SMALLEST


def total_ram_bytes(meminfo: Path = _MEMINFO) -> int | None:
    """The machine's total physical memory in bytes.

    Args:
        meminfo: The Linux ``/proc/meminfo`` file to read first (its ``MemTotal`` line).

    Returns:
        The total from ``meminfo``, else from ``os.sysconf`` (page size times physical pages), else ``None``.
    """
    try:
        for line in meminfo.read_text(encoding="ascii", errors="replace").splitlines():
            name, _, value = line.partition(":")
            if name == "MemTotal":
                amount, _, unit = value.strip().partition(" ")
                total = int(amount) * (1024 if unit.strip().lower() == "kb" else 1)
                if total > 0:
                    return total
                break
    except (OSError, ValueError):
        pass
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # no sysconf (Windows) or the names are unknown
        return None
    return total if total > 0 else None
