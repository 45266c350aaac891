"""Decides whether llama.cpp's extra buffer types (AMX, weight repacking) are safe here, by probing, not by CPU name.

llama.cpp puts the weights in an "extra" CPU buffer type when one fits the CPU: AMX tiles on CPUs that advertise
``amx_tile``, repacked layouts for AVX2/AVX-512/NEON. They are the fast path, but AMX needs the kernel to grant the
process AMX tile state first (Linux: ``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``); a VM whose CPU
advertises AMX without supporting it refuses that request, and llama.cpp's AMX kernels then fault. So: AMX advertised
and the request granted, or no AMX advertised → on; AMX advertised and the request refused → off. The request changes
the state of the process that makes it, so it is made in the worker process that loads the model.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ARCH_REQ_XCOMP_PERM: Final = 0x1023
XFEATURE_XTILEDATA: Final = 18
SYS_ARCH_PRCTL_X86_64: Final = 158
CPUINFO: Final = Path("/proc/cpuinfo")

PermissionRequest = Callable[[], bool]
"""Asks the kernel for AMX tile state for this process; ``True`` when granted."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtraBufferDecision:
    """Whether to load with llama.cpp's extra buffer types, and why.

    Attributes:
        enabled: The value for llama.cpp's ``use_extra_bufts`` model parameter.
        reason: A short sentence for logs and ``doctor``.
        source: ``config`` (``lmsupply.extraBufferTypes`` was set) or ``probe``.
    """

    enabled: bool
    reason: str
    source: str = "probe"


def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The CPU feature flags the kernel lists (the first ``flags`` line of ``/proc/cpuinfo``); empty if unreadable."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def request_amx_permission() -> bool:
    """Ask Linux for AMX tile data state for this process (``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``).

    Returns:
        ``True`` when the kernel granted it (or had already), ``False`` when it refused or the call is unavailable.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        result = libc.syscall(
            ctypes.c_long(SYS_ARCH_PRCTL_X86_64), ctypes.c_int(ARCH_REQ_XCOMP_PERM), ctypes.c_ulong(XFEATURE_XTILEDATA)
        )
    except (OSError, AttributeError):
        return False
    return int(result) == 0


def decide_extra_buffer_types(
    override: bool | None,
    *,
    flags: Callable[[], frozenset[str]] = cpu_flags,
    request_amx: PermissionRequest = request_amx_permission,
    system: str | None = None,
    machine: str | None = None,
) -> ExtraBufferDecision:
    """Decide llama.cpp's ``use_extra_bufts`` for this process.

    Args:
        override: ``lmsupply.extraBufferTypes`` when set: it wins over the probe.
        flags: Reads the CPU's feature flags (injectable for tests).
        request_amx: Makes the AMX permission request (injectable for tests: refused or granted).
        system: ``platform.system()`` (injectable).
        machine: ``platform.machine()`` (injectable).

    Returns:
        The decision and its reason.
    """
    if override is not None:
        state = "on" if override else "off"
        reason = f"lmsupply.extraBufferTypes turns them {state}"
        return ExtraBufferDecision(enabled=override, reason=reason, source="config")
    system = platform.system() if system is None else system
    machine = (platform.machine() if machine is None else machine).lower()
    if system != "Linux" or machine not in ("x86_64", "amd64"):
        return ExtraBufferDecision(enabled=True, reason=f"no AMX permission model on {system} {machine}")
    if "amx_tile" not in flags():
        return ExtraBufferDecision(enabled=True, reason="the CPU advertises no AMX; repacked weights are safe")
    if request_amx():
        return ExtraBufferDecision(enabled=True, reason="the CPU advertises AMX and Linux granted AMX tile state")
    return ExtraBufferDecision(
        enabled=False, reason="the CPU advertises AMX but Linux refused AMX tile state (a VM without AMX support)"
    )
