"""The trust store from several processes at once: each read-modify-write holds the lock, so no record is lost."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from ironhive.adapters.config.trust import TrustStore
from tests.support.processes import run_in_processes

RECORDS_PER_PROCESS = 40
PROCESSES = 3


def trust_many(home: str, prefix: str, count: int) -> None:
    store = TrustStore.for_home(Path(home))
    for index in range(count):
        store.remember(Path(f"/projects/{prefix}-{index}/.ironhive/plugins.yaml"), f"{index:064x}")


def test_concurrent_writers_from_several_processes_lose_no_record(tmp_path: Path) -> None:
    run_in_processes(trust_many, [(str(tmp_path), f"p{number}", RECORDS_PER_PROCESS) for number in range(PROCESSES)])
    store = TrustStore.for_home(tmp_path)
    expected = {
        f"/projects/p{number}-{index}/.ironhive/plugins.yaml"
        for number in range(PROCESSES)
        for index in range(RECORDS_PER_PROCESS)
    }
    assert {str(record.path) for record in store.records()} == expected
    assert store.path.stat().st_mode & 0o777 == 0o600
    lock = store.path.with_name(store.path.name + ".lock")
    assert not lock.exists() or lock.stat().st_mode & 0o077 == 0  # never readable by others
    assert sorted(path.name for path in store.path.parent.iterdir() if path.name.endswith(".tmp")) == []


def test_revoke_and_remember_interleaved_across_processes_keep_the_others(tmp_path: Path) -> None:
    store = TrustStore.for_home(tmp_path)
    kept = Path("/projects/kept/.ironhive/plugins.yaml")
    store.remember(kept, "a" * 64)
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=trust_many, args=(str(tmp_path), "w", RECORDS_PER_PROCESS))
    writer.start()
    for index in range(RECORDS_PER_PROCESS):
        temporary = Path(f"/projects/revoked-{index}/.ironhive/plugins.yaml")
        store.remember(temporary, "b" * 64)
        assert store.revoke(temporary)
    writer.join(timeout=120)
    assert writer.exitcode == 0
    paths = {str(record.path) for record in store.records()}
    assert paths == {str(kept)} | {
        f"/projects/w-{index}/.ironhive/plugins.yaml" for index in range(RECORDS_PER_PROCESS)
    }
