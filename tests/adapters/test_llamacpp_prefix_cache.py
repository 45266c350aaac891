"""The on-disk prefix cache: entries, verification, the bound, concurrent runs, and reuse by the real model."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ironhive.adapters.atomic_files import is_temporary
from ironhive.adapters.llamacpp.client import LlamaCppChatClient
from ironhive.adapters.llamacpp.prefix_cache import PrefixStateCache, default_cache_dir, identity_digest
from ironhive.ports.chat import ChatMessage, ChatOptions, Role

IDENTITY = identity_digest(["model.gguf", "123", "456", "n_ctx=2048"])
OTHER = identity_digest(["other.gguf"])


def make_cache(root: Path, max_bytes: int = 1 << 30, identity: bytes = IDENTITY) -> PrefixStateCache:
    return PrefixStateCache(root, identity, max_bytes=max_bytes)


def test_default_folder_is_under_the_users_ironhive_home(tmp_path: Path) -> None:
    assert default_cache_dir(tmp_path) == tmp_path / ".ironhive" / "cache" / "llamacpp-prefix"


def test_the_longest_shared_prefix_is_found_and_loaded(tmp_path: Path) -> None:
    cache = make_cache(tmp_path / "cache")
    cache.save([1, 2, 3, 4], b"state-a")
    cache.save([1, 2, 9, 9, 9], b"state-b")

    match = cache.best_match([1, 2, 9, 9, 5, 6])
    assert match is not None and (match.common, match.entry_tokens) == (4, 5)
    loaded = cache.load(match.path)
    assert loaded is not None and (loaded.tokens, loaded.state) == ([1, 2, 9, 9, 9], b"state-b")
    assert cache.best_match([7, 8]) is None


def test_files_are_private(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    path = make_cache(root).save([1, 2, 3], b"x" * 10)

    assert path is not None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


def test_another_identity_sees_nothing(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    make_cache(root).save([1, 2, 3], b"x")

    assert make_cache(root, identity=OTHER).best_match([1, 2, 3]) is None


def test_a_temporary_file_left_by_a_killed_writer_is_cleared_once_stale(tmp_path: Path) -> None:
    cache = make_cache(tmp_path / "cache")
    cache.save(list(range(10)), b"s" * 64)
    stale = cache.folder / ".entry.state.0123456789ab.tmp"
    fresh = cache.folder / ".entry.state.ba9876543210.tmp"
    for path in (stale, fresh):
        path.write_bytes(b"half")
    os.utime(stale, (1, 1))
    cache.evict()
    assert (stale.exists(), fresh.exists(), len(cache.entries())) == (False, True, 1)


def test_a_corrupt_entry_is_detected_and_deleted(tmp_path: Path) -> None:
    cache = make_cache(tmp_path / "cache")
    path = cache.save([1, 2, 3], b"good state bytes")
    assert path is not None
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # one flipped byte in the state: the checksum no longer matches
    path.write_bytes(bytes(data))

    match = cache.best_match([1, 2, 3])
    assert match is not None  # the header and length still look right
    assert cache.load(match.path) is None
    assert not path.exists()


def test_truncated_or_foreign_files_are_never_trusted(tmp_path: Path) -> None:
    cache = make_cache(tmp_path / "cache")
    path = cache.save([1, 2, 3], b"state" * 10)
    assert path is not None
    path.write_bytes(path.read_bytes()[:-5])  # cut short, as by a crash in the middle of a copy
    foreign = cache.folder / "junk.state"
    foreign.write_bytes(b"not a cache entry at all")

    assert cache.best_match([1, 2, 3]) is None
    assert not path.exists() and not foreign.exists()


def test_an_entry_superseded_by_a_longer_one_is_dropped(tmp_path: Path) -> None:
    cache = make_cache(tmp_path / "cache")
    first = cache.save([1, 2, 3], b"a")
    second = cache.save([1, 2, 3, 4, 5], b"b")

    assert first is not None and second is not None
    assert not first.exists() and second.exists()


def test_the_most_recently_used_entry_is_the_one_a_load_or_save_touched_last(tmp_path: Path) -> None:
    cache = make_cache(tmp_path)
    assert cache.most_recent() is None
    old = cache.save(list(range(40)), b"a" * 64)
    new = cache.save(list(range(100, 140)), b"b" * 64)
    assert old is not None and new is not None
    os.utime(old, (1000, 1000))
    os.utime(new, (2000, 2000))

    assert cache.most_recent() == new
    assert cache.load(old) is not None  # a load counts as a use
    assert cache.most_recent() == old


def test_the_bound_evicts_the_least_recently_used(tmp_path: Path) -> None:
    cache = make_cache(tmp_path / "cache", max_bytes=3 * 1200)
    paths = []
    for index in range(3):
        path = cache.save([100 + index, 1], bytes(1000))
        assert path is not None
        os.utime(path, (1000 + index, 1000 + index))
        paths.append(path)
    loaded = cache.load(paths[0])  # using the oldest makes it the newest
    assert loaded is not None

    cache.save([200, 1], bytes(1000))

    assert paths[0].exists() and not paths[1].exists() and paths[2].exists()
    total = sum(path.stat().st_size for path in cache.entries())
    assert total <= 3 * 1200
    assert make_cache(tmp_path / "cache", max_bytes=100).save([1], bytes(1000)) is None  # larger than the bound


CONCURRENT_WRITER = """
import sys, hashlib
from pathlib import Path
from ironhive.adapters.llamacpp.prefix_cache import PrefixStateCache, identity_digest
root, seed = Path(sys.argv[1]), int(sys.argv[2])
cache = PrefixStateCache(root, identity_digest(["model.gguf", "123", "456", "n_ctx=2048"]), max_bytes=6 * 300_000)
for round in range(40):
    tokens = [1, 2, 3] + [seed, round % 5]
    state = hashlib.sha256(bytes(tokens)).digest() * 8000  # ~256 KB, derived from the tokens
    cache.save(tokens, state)
    match = cache.best_match([1, 2, 3, (seed + 1) % 3, round % 5])
    if match is not None:
        entry = cache.load(match.path)
        if entry is not None:  # deleted meanwhile by another writer's eviction: a miss, never garbage
            assert entry.state == hashlib.sha256(bytes(entry.tokens)).digest() * 8000, "corrupt state"
print("ok")
"""


def test_concurrent_processes_never_see_a_corrupt_entry(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(CONCURRENT_WRITER), str(root), str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in range(3)
    ]
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0 and out.strip() == "ok", err

    cache = make_cache(root)
    entries = cache.entries()
    assert entries
    for path in entries:
        entry = cache.load(path)
        assert entry is not None
        assert entry.state == hashlib.sha256(bytes(entry.tokens)).digest() * 8000
    assert not [path for path in cache.folder.iterdir() if is_temporary(path.name)]


# --- the real model ----------------------------------------------------------------------------------------------

SYSTEM = ChatMessage.of_text(
    Role.SYSTEM,
    "You are ironhive, a helpful assistant that runs tools for its user. " * 20
    + "Answer briefly and never invent file contents.",
)
PROMPT = (SYSTEM, ChatMessage.of_text(Role.USER, "Say hello"))
OPTIONS = ChatOptions(temperature=0.0, max_output_tokens=8)


async def one_run(cache_dir: Path, messages: tuple[ChatMessage, ...] = PROMPT) -> tuple[str, LlamaCppChatClient]:
    client = LlamaCppChatClient(n_ctx=2048, prefix_cache_dir=cache_dir)
    try:
        response = await client.get_response(messages, OPTIONS)
    finally:
        client.close()  # waits for the worker, which writes the cache after the reply
    return response.message.text, client


@pytest.mark.local_model
async def test_a_second_run_restores_the_prefix_instead_of_evaluating_it(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    cache_dir = tmp_path / "cache"

    first_text, first = await one_run(cache_dir)
    second_text, second = await one_run(cache_dir)

    assert first.last_run is not None and second.last_run is not None
    prompt = first.last_run.prompt_tokens
    assert prompt > 200
    assert first.last_run.evaluated_tokens == prompt and first.last_run.restored_tokens == 0
    # The whole prompt was restored from disk; llama.cpp re-evaluates at most its last token for fresh logits.
    assert second.last_run.evaluated_tokens <= 2
    assert second.last_run.restored_tokens >= prompt - 2
    assert second_text.strip() and first_text.strip()

    # A different question after the same system prompt restores the shared part and evaluates only the rest.
    other = (SYSTEM, ChatMessage.of_text(Role.USER, "What is two plus two?"))
    _, third = await one_run(cache_dir, other)
    assert third.last_run is not None
    assert third.last_run.restored_tokens > prompt - 20
    assert third.last_run.evaluated_tokens < 20


@pytest.mark.local_model
async def test_a_corrupt_cache_file_is_rebuilt(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    cache_dir = tmp_path / "cache"
    await one_run(cache_dir)
    (entry,) = cache_dir.glob("*/*.state")
    data = bytearray(entry.read_bytes())
    for offset in range(len(data) // 2, len(data) // 2 + 64):
        data[offset] ^= 0x5A
    entry.write_bytes(bytes(data))

    text, rebuilt = await one_run(cache_dir)

    assert text.strip()
    assert rebuilt.last_run is not None
    assert rebuilt.last_run.restored_tokens == 0
    assert rebuilt.last_run.evaluated_tokens == rebuilt.last_run.prompt_tokens  # evaluated afresh, not trusted
    (again,) = cache_dir.glob("*/*.state")
    _, third = await one_run(cache_dir)  # and the rewritten entry is good
    assert third.last_run is not None and third.last_run.evaluated_tokens <= 2
    assert again.exists()


@pytest.mark.local_model
async def test_later_turns_in_one_process_reuse_the_evaluated_prefix(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    client = LlamaCppChatClient(n_ctx=2048, prefix_cache_dir=tmp_path / "cache", prefix_cache_max_bytes=0)
    try:
        first = await client.get_response(PROMPT, OPTIONS)
        history = (*PROMPT, first.message, ChatMessage.of_text(Role.USER, "And goodbye?"))
        await client.get_response(history, OPTIONS)
        stats = client.last_run
    finally:
        client.close()

    assert stats is not None
    assert stats.restored_tokens == 0  # the disk cache is off here: this is the memory
    assert stats.reused_tokens > 200 and stats.evaluated_tokens < 40
    assert not (tmp_path / "cache").exists()


@pytest.mark.local_model
async def test_two_concurrent_runs_share_the_cache_safely(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    cache_dir = tmp_path / "cache"

    results = await asyncio.gather(one_run(cache_dir), one_run(cache_dir))

    assert all(text.strip() for text, _ in results)
    _, after = await one_run(cache_dir)
    assert after.last_run is not None and after.last_run.evaluated_tokens <= 2  # a good entry is there
    left = [path for path in cache_dir.rglob("*") if path.is_file()]
    assert left and all(path.name.endswith(".state") for path in left)  # no half-written temporary file is left


@pytest.mark.local_model
async def test_a_worker_started_early_restores_the_last_prefix_before_the_request_comes(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    cache_dir = tmp_path / "cache"
    _, first = await one_run(cache_dir)
    assert first.last_run is not None
    prompt = first.last_run.prompt_tokens

    LlamaCppChatClient(n_ctx=2048, prefix_cache_dir=cache_dir).start_early()  # loads, then prefetches the entry
    second = LlamaCppChatClient(n_ctx=2048, prefix_cache_dir=cache_dir)
    try:
        second.count("x")  # takes the early worker over; answered after its prefetch (requests take turns)
        for entry in cache_dir.rglob("*.state"):
            entry.unlink()  # from now on only what the worker already holds can spare the evaluation
        response = await second.get_response(PROMPT, OPTIONS)
    finally:
        second.close()

    assert second.last_run is not None and response.message.text.strip()
    # Restored from disk before the request came: the request found the prefix in memory already.
    assert second.last_run.evaluated_tokens <= 2
    assert second.last_run.restored_tokens >= prompt - 2 and second.last_run.reused_tokens == 0
