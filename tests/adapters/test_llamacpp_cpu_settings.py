"""The llama.cpp thread and attention probe: usable CPUs, physical cores, the cgroup quota, and the choice from them."""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.llamacpp.cpu_settings import (
    cgroup_cpu_quota,
    decide_cpu_settings,
    physical_cores,
    usable_cpus,
)


@given(
    cpus=st.frozensets(st.integers(0, 255), min_size=1, max_size=64),
    threads_per_core=st.integers(1, 4),
    quota=st.none() | st.floats(0.1, 300.0),
    configured=st.none() | st.integers(1, 64),
)
def test_the_choice_never_asks_for_more_threads_than_the_process_can_run(
    cpus: frozenset[int], threads_per_core: int, quota: float | None, configured: int | None
) -> None:
    cores = max(1, math.ceil(len(cpus) / threads_per_core))

    settings = decide_cpu_settings(configured, cpus=lambda: cpus, cores=lambda usable: cores, quota=lambda: quota)

    allowed = len(cpus) if quota is None else max(1, min(len(cpus), math.floor(quota)))
    assert 1 <= settings.n_threads_batch <= min(cores, allowed)
    # One thread per physical core the process may use: as many as it can keep busy, no more.
    assert settings.n_threads_batch == max(1, min(cores, allowed))
    if configured is None:
        assert 1 <= settings.n_threads <= settings.n_threads_batch
        assert settings.n_threads == max(1, min(allowed // 2, settings.n_threads_batch))
    else:
        assert settings.n_threads == configured
    assert settings.flash_attn is True


def test_a_container_limited_to_two_cpus_of_a_big_host_gets_two_prompt_threads() -> None:
    host = frozenset(range(64))

    settings = decide_cpu_settings(None, cpus=lambda: host, cores=lambda usable: 32, quota=lambda: 2.0)

    assert (settings.n_threads, settings.n_threads_batch) == (1, 2)
    assert "quota of 2 CPUs" in settings.reason


def test_this_process_can_run_on_the_cpus_it_reports() -> None:
    cpus = usable_cpus()

    assert cpus and all(cpu >= 0 for cpu in cpus)
    assert 1 <= physical_cores(cpus) <= len(cpus)


def write_topology(sysfs: Path, cpu: int, package: int, core: int) -> None:
    topology = sysfs / f"cpu{cpu}" / "topology"
    topology.mkdir(parents=True)
    (topology / "physical_package_id").write_text(f"{package}\n")
    (topology / "core_id").write_text(f"{core}\n")


def test_hyperthread_siblings_count_as_one_core(tmp_path: Path) -> None:
    # Two packages of two cores, two threads each: CPUs 0-3 on package 0, 4-7 on package 1 (core ids repeat).
    for cpu in range(8):
        write_topology(tmp_path, cpu, package=cpu // 4, core=(cpu % 4) // 2)

    assert physical_cores(range(8), tmp_path) == 4
    assert physical_cores({0, 1}, tmp_path) == 1  # siblings of one core
    assert physical_cores({0, 2, 4}, tmp_path) == 3


def test_an_unreadable_topology_counts_every_cpu(tmp_path: Path) -> None:
    write_topology(tmp_path, 0, package=0, core=0)

    cpus: Collection[int] = {0, 1, 2}
    assert physical_cores(cpus, tmp_path) == 3


def cgroup(tmp_path: Path, cpu_max: str | None, own: str = "/user.slice/app") -> tuple[Path, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    membership = tmp_path / "cgroup"
    membership.write_text(f"1:cpu:/ignored\n0::{own}\n")
    folder = tmp_path / "fs" / own.strip("/")
    folder.mkdir(parents=True)
    if cpu_max is not None:
        (folder / "cpu.max").write_text(cpu_max)
    return tmp_path / "fs", membership


def test_the_quota_is_read_from_the_process_own_cgroup(tmp_path: Path) -> None:
    root, membership = cgroup(tmp_path, "150000 100000\n")

    assert cgroup_cpu_quota(root, membership) == 1.5


def test_no_quota_when_unlimited_missing_or_garbled(tmp_path: Path) -> None:
    for index, text in enumerate(("max 100000\n", None, "lots\n", "0 100000\n", "-1 100000\n")):
        root, membership = cgroup(tmp_path / str(index), text)
        assert cgroup_cpu_quota(root, membership) is None, text
    assert cgroup_cpu_quota(tmp_path / "absent", tmp_path / "absent-membership") is None
