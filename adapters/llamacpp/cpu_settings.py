"""llama.cpp's thread counts and attention kernel for this machine, probed from the CPUs this process may really use.

llama-cpp-python sizes its threads by ``multiprocessing.cpu_count()``: every CPU of the host, even where an affinity
mask or a cgroup quota (a container limited to 2 CPUs on a 64-CPU host) leaves the process far fewer, and counting
hyperthreads, which share one core's vector units. llama.cpp's threads meet at a barrier after every operation, so a
thread more than there are CPUs to run it stalls all the others (measured here: 2 threads on 2 cores busy with other
work evaluated a prompt up to twice as slowly as 1 thread). So prompt evaluation gets one thread per physical core the
process may use (llama.cpp's own default), capped by the cgroup quota; generation keeps llama-cpp-python's half of the
usable CPUs (never more than the prompt's threads). Flash attention is on: llama.cpp's CPU backend implements it for
every head size, and it evaluates a prompt with fewer CPU seconds (7-10 % for the bundled model on a 2-core AVX2
server); the worker falls back when a context cannot be made with it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Final

SYSFS_CPU: Final = Path("/sys/devices/system/cpu")
CGROUP_ROOT: Final = Path("/sys/fs/cgroup")
CGROUP_MEMBERSHIP: Final = Path("/proc/self/cgroup")


@dataclass(frozen=True, kw_only=True, slots=True)
class CpuSettings:
    """The llama.cpp load settings chosen for this machine.

    Attributes:
        n_threads: Threads for generation (one token at a time).
        n_threads_batch: Threads for prompt evaluation.
        flash_attn: Whether to ask llama.cpp for flash attention.
        reason: A short account of the probe, for logs and the load parameters.
    """

    n_threads: int
    n_threads_batch: int
    flash_attn: bool
    reason: str


def usable_cpus() -> frozenset[int]:
    """The CPUs this process may run on (its affinity mask; every CPU where the platform has no such mask)."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        try:
            return frozenset(getaffinity(0))
        except OSError:
            pass
    return frozenset(range(os.cpu_count() or 1))


def cgroup_cpu_quota(root: Path = CGROUP_ROOT, membership: Path = CGROUP_MEMBERSHIP) -> float | None:
    """The CPUs' worth of time the cgroup v2 ``cpu.max`` of this process grants, ``None`` when unlimited or unknown."""
    try:
        lines = membership.read_text(encoding="utf-8", errors="replace").splitlines()
        own = next((line[3:].strip("/") for line in lines if line.startswith("0::")), "")
        text = (root / own / "cpu.max").read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(text) != 2 or text[0] == "max":
        return None
    try:
        quota, period = int(text[0]), int(text[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def physical_cores(cpus: Collection[int], sysfs: Path = SYSFS_CPU) -> int:
    """How many distinct cores ``cpus`` lie on (hyperthread siblings count once); ``len(cpus)`` if unknown."""
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topology = sysfs / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text(encoding="ascii").strip()
            core = (topology / "core_id").read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return max(1, len(cpus))
        cores.add((package, core))
    return max(1, len(cores))


def decide_cpu_settings(
    n_threads: int | None,
    *,
    cpus: Callable[[], Collection[int]] = usable_cpus,
    cores: Callable[[Collection[int]], int] = physical_cores,
    quota: Callable[[], float | None] = cgroup_cpu_quota,
) -> CpuSettings:
    """Choose threads and the attention kernel for this process.

    Args:
        n_threads: The configured generation threads, if any (kept as given).
        cpus: The CPUs this process may run on (injectable for tests).
        cores: The physical cores those CPUs lie on (injectable).
        quota: The cgroup's CPU quota in CPUs, ``None`` when unlimited (injectable).

    Returns:
        The settings and the reason for them.
    """
    usable = cpus()
    count, physical = max(1, len(usable)), cores(usable)
    limit = quota()
    allowed = count if limit is None else max(1, min(count, math.floor(limit)))
    batch = max(1, min(physical, allowed))
    generation = n_threads if n_threads is not None else max(1, min(allowed // 2, batch))
    reason = f"{count} usable CPUs on {physical} cores" + (f", a quota of {limit:g} CPUs" if limit else "")
    return CpuSettings(n_threads=generation, n_threads_batch=batch, flash_attn=True, reason=reason)
