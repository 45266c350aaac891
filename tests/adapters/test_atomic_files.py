"""The one atomic-write helper: whole content or none, fsync of file and folder, owner-only where asked."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ironhive.adapters.atomic_files import atomic_writer, is_temporary, write_atomically


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=st.binary(max_size=2048), new=st.one_of(st.binary(max_size=4096), st.text(max_size=1024)))
def test_the_new_content_replaces_the_old_whole(tmp_path: Path, old: bytes, new: bytes | str) -> None:
    target = tmp_path / "file.json"
    target.write_bytes(old)
    write_atomically(target, new)
    assert target.read_bytes() == (new.encode("utf-8") if isinstance(new, str) else new)
    assert leftovers(tmp_path) == []


def test_a_private_file_is_owner_only_even_under_a_permissive_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        write_atomically(tmp_path / "new", b"secret", private=True)
        existing = tmp_path / "existing"
        existing.write_bytes(b"old")
        existing.chmod(0o644)
        write_atomically(existing, b"secret", private=True)
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o600
    assert stat.S_IMODE(existing.stat().st_mode) == 0o600


def test_a_shared_file_keeps_its_mode_or_gets_the_umask_default(tmp_path: Path, umask_022: None) -> None:
    write_atomically(tmp_path / "new", b"x")
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o644
    kept = tmp_path / "kept"
    kept.write_bytes(b"old")
    kept.chmod(0o640)
    write_atomically(kept, b"x")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640


def test_a_failure_while_writing_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "config.yaml"
    target.write_text("old: true\n")
    with pytest.raises(RuntimeError), atomic_writer(target) as stream:
        stream.write(b"new: half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old: true\n"
    assert leftovers(tmp_path) == []


def test_the_file_is_synced_before_the_rename_and_the_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "todo.json"
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor: int) -> None:
        kind = "folder" if stat.S_ISDIR(os.fstat(descriptor).st_mode) else "file"
        events.append(f"fsync {kind}")
        real_fsync(descriptor)

    def replace(source: str, destination: Path) -> None:
        events.append("rename")
        real_replace(source, destination)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    write_atomically(target, b"{}")
    assert events == ["fsync file", "rename", "fsync folder"]
    events.clear()
    write_atomically(target, b"[]", durable=False)  # a cache: still renamed whole, no disk flush
    assert (events, target.read_bytes(), leftovers(tmp_path)) == (["rename"], b"[]", [])


def test_only_this_modules_temporary_names_count_as_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "entry.state"
    seen: list[str] = []
    real_replace = os.replace

    def replace(source: str, destination: Path) -> None:
        seen.append(Path(source).name)
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", replace)
    write_atomically(target, b"x")
    assert is_temporary(seen[0])
    assert not any(is_temporary(name) for name in ("entry.state", ".entry.state", ".tmp-abc", "a.0123456789ab.tmp"))


def test_a_missing_folder_is_an_os_error_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / "missing" / "file", b"x")
    assert list(tmp_path.iterdir()) == []
