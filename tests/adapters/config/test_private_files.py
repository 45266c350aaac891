"""Owner-only files under ~/.ironhive: created 0700/0600 whatever the umask, repaired at start-up and by the doctor."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ironhive.adapters.config.private_files import (
    exposed_paths,
    make_private_directory,
    open_private,
    restrict_tree,
    secure_user_directory,
)
from ironhive.adapters.config.writer import set_value
from ironhive.adapters.sessions.execution_log import JsonlExecutionLog
from ironhive.adapters.sessions.store import DiskCacheSessionStore
from ironhive.ports.chat import ChatMessage, Role

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX modes")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def modes_under(root: Path) -> dict[str, int]:
    """Every path under ``root`` (itself included), relative, with its permission bits."""
    found = {".": mode(root)}
    for directory, folders, files in os.walk(root):
        for name in (*folders, *files):
            path = Path(directory, name)
            found[str(path.relative_to(root))] = mode(path)
    return found


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask that takes nothing away: modes must come from how ironhive creates files, not from the umask."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_sessions_logs_and_config_are_created_owner_only_whatever_the_umask(home: Path, open_umask: None) -> None:
    home.mkdir()
    base = home / ".ironhive"
    store = DiskCacheSessionStore(base, home / "project")

    async def use() -> None:
        info = await store.create("gpt")
        await store.append_turn(info.id, (ChatMessage.of_text(Role.USER, "my key is sk-secret"),))
        await JsonlExecutionLog(base / "logs").turn_start(info.id, 1, "my key is sk-secret")

    asyncio.run(use())
    set_value(home, "openai.apiKey", "sk-abcdefghijklmnop")
    found = modes_under(base)
    assert {"logs", "projects", "config.yaml"} <= set(found)
    assert any(name.endswith("cache.db") for name in found)
    assert {name: value for name, value in found.items() if value & 0o077} == {}
    assert all(value in (0o600, 0o700) for value in found.values()), found


def test_a_store_and_a_log_left_readable_by_an_earlier_version_are_restricted_when_opened(home: Path) -> None:
    base = home / ".ironhive"
    store = DiskCacheSessionStore(base, home / "project")
    created = asyncio.run(store.create("gpt"))
    log = JsonlExecutionLog(base / "logs")
    asyncio.run(log.turn_start(created.id, 1, "hello"))
    database = store.directory / "cache.db"
    for path in (database, log.path_for(created.id)):
        path.chmod(0o644)
    store.directory.chmod(0o755)

    reopened = DiskCacheSessionStore(base, home / "project")
    assert asyncio.run(reopened.get(created.id)).id == created.id
    asyncio.run(log.turn_start(created.id, 2, "again"))
    assert (mode(database), mode(store.directory), mode(log.path_for(created.id))) == (0o600, 0o700, 0o600)


def test_make_private_directory_creates_missing_parents_0700_and_leaves_existing_parents_alone(
    tmp_path: Path, open_umask: None
) -> None:
    tmp_path.chmod(0o755)
    target = tmp_path / ".ironhive" / "projects" / "abc"
    make_private_directory(target)
    assert [mode(path) for path in (tmp_path, target.parents[1], target.parent, target)] == [0o755, 0o700, 0o700, 0o700]
    target.chmod(0o775)
    make_private_directory(target)
    assert mode(target) == 0o700


def test_open_private_creates_0600_and_restricts_an_existing_file(tmp_path: Path, open_umask: None) -> None:
    fresh = tmp_path / "fresh"
    os.close(open_private(fresh, os.O_WRONLY))
    old = tmp_path / "old"
    old.write_text("x")
    old.chmod(0o664)
    os.close(open_private(old, os.O_RDONLY))
    assert (mode(fresh), mode(old)) == (0o600, 0o600)


def test_start_up_repairs_the_folder_and_what_lies_directly_in_it(home: Path) -> None:
    base = home / ".ironhive"
    (base / "logs").mkdir(parents=True)
    config = base / "config.yaml"
    config.write_text("openai:\n  apiKey: sk-x\n")
    deep = base / "logs" / "old.execlog.jsonl"
    deep.write_text("{}\n")
    for path, wrong in ((base, 0o755), (base / "logs", 0o755), (config, 0o644), (deep, 0o644)):
        path.chmod(wrong)

    changed = secure_user_directory(home)

    assert sorted(changed) == sorted([base, base / "logs", config])
    assert (mode(base), mode(base / "logs"), mode(config)) == (0o700, 0o700, 0o600)
    assert mode(deep) == 0o644  # deeper files: repaired by the writer that opens them, or by the doctor
    assert secure_user_directory(home) == []


def test_exposed_paths_and_restrict_tree_cover_everything_but_links(home: Path, tmp_path: Path) -> None:
    base = home / ".ironhive"
    model = base / "models" / "org" / "model.gguf"
    model.parent.mkdir(parents=True, mode=0o755)
    model.write_bytes(b"GGUF")
    model.chmod(0o755)
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not ironhive's")
    elsewhere.chmod(0o644)
    (base / "link").symlink_to(elsewhere)
    base.chmod(0o750)
    (base / "models").chmod(0o777)

    assert exposed_paths(home) == sorted([base, base / "models", model.parent, model])
    assert restrict_tree(home) == sorted([base, base / "models", model.parent, model])
    assert (mode(base), mode(base / "models"), mode(model.parent), mode(model)) == (0o700, 0o700, 0o700, 0o700)
    assert mode(elsewhere) == 0o644  # a link's target is not ironhive's to change
    assert exposed_paths(home) == []
    assert exposed_paths(tmp_path / "nobody") == []
