"""The resident worker keeps the model and the evaluated prompt between runs, serves one run at a time, is private,
ends when idle or stopped, and reports a crash as a child worker's would.

Most tests run a stand-in ``llama_cpp`` (on the resident's PYTHONPATH) that counts its loads and calls; one runs the
bundled model and counts the prompt tokens the second run evaluates.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ironhive.adapters.llamacpp import early_start
from ironhive.adapters.llamacpp.client import LlamaCppChatClient
from ironhive.adapters.llamacpp.resident import (
    ResidentPaths,
    ResidentPlace,
    acquire,
    peer_ids,
    resident_key,
    stop_all,
)
from ironhive.domain.errors import LocalModelCrashedError
from ironhive.ports.chat import ChatMessage, ChatOptions, Role
from tests.adapters.test_llamacpp_worker import CRASH_ON_GENERATE, fake_llama_cpp

HELLO = (ChatMessage.of_text(Role.USER, "hi"),)

COUNTING = """
import os
__version__ = "0.0-counting"
LOADS = 0
class LogitsProcessorList(list):
    pass
class Llama:
    n_batch = 512
    def __init__(self, **kwargs):
        global LOADS
        LOADS += 1
        self.calls = 0
        self.n_tokens = 0
        self._seed = 42
    def eval(self, tokens):
        self.n_tokens += len(tokens)
    def create_chat_completion(self, **kwargs):
        self.calls += 1
        text = f"pid={os.getpid()} loads={LOADS} calls={self.calls} seed={self._seed}"
        self._seed += 1  # as llama-cpp-python draws the next unseeded call's seed from this one
        yield {"choices": [{"delta": {"content": text}, "finish_reason": None}]}
        yield {"choices": [{"delta": {}, "finish_reason": "stop"}]}
    def close(self):
        pass
"""


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[ResidentPlace]:
    # On a busy machine starting Python alone can take seconds: a run would then (rightly) go on without a resident.
    monkeypatch.setattr("ironhive.adapters.llamacpp.resident.START_SECONDS", 60.0)
    # A short folder of its own (mkdtemp makes it 0700): socket paths must fit 107 bytes.
    directory = Path(tempfile.mkdtemp(prefix="ihr"))
    yield ResidentPlace(directory=directory, idle_seconds=60.0)
    early_start.discard_all()
    pids = _resident_pids(directory)
    stop_all(directory)
    _wait_gone(pids)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(2044))
    return path


def _resident_pids(directory: Path) -> list[int]:
    pids = []
    for path in directory.glob("lm-*.sock"):
        with socket.socket(socket.AF_UNIX) as sock:
            try:
                sock.connect(str(path))
            except OSError:
                continue
            pids.append(peer_ids(sock)[0])
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    return state != "Z"


def _wait_gone(pids: list[int], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, f"residents {pids} did not exit"
        time.sleep(0.05)


def _client(model: Path, tmp_path: Path, n_ctx: int = 256) -> LlamaCppChatClient:
    return LlamaCppChatClient(model_path=model, n_ctx=n_ctx, prefix_cache_dir=tmp_path / "cache")


async def _one_run(model: Path, tmp_path: Path, place: ResidentPlace) -> str:
    """One run as a keyless one-shot makes it: start early (on the resident), answer, close."""
    _client(model, tmp_path).start_early(place)
    client = _client(model, tmp_path)
    try:
        return (await client.get_response(HELLO, ChatOptions())).message.text
    finally:
        client.close()


async def test_the_next_run_is_served_by_the_same_resident_with_the_model_loaded_and_a_fresh_seed(
    model: Path, tmp_path: Path, place: ResidentPlace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", COUNTING)))

    first = await _one_run(model, tmp_path, place)
    second = await _one_run(model, tmp_path, place)

    pid = first.split()[0]
    assert first == f"{pid} loads=1 calls=1 seed=42"
    assert second == f"{pid} loads=1 calls=2 seed=42"  # sampled as a fresh worker would: nothing of the run before
    assert int(pid.removeprefix("pid=")) != os.getpid()


async def test_a_run_while_another_uses_the_resident_gets_none_and_other_settings_another_resident(
    model: Path, tmp_path: Path, place: ResidentPlace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", COUNTING)))
    settings = _client(model, tmp_path)._load_settings()
    other = _client(model, tmp_path, n_ctx=512)._load_settings()

    held = acquire(settings, place)
    assert held is not None
    try:
        assert acquire(settings, place) is None  # busy: that run starts a child worker instead of waiting
        elsewhere = acquire(other, place)
        assert elsewhere is not None and elsewhere.pid != held.pid
        elsewhere.close()
    finally:
        held.close()
    again = acquire(settings, place)
    assert again is not None and again.pid == held.pid
    again.close()


def test_the_key_changes_with_every_setting_the_model_file_and_llama_cpp_environment(
    model: Path, tmp_path: Path
) -> None:
    settings = _client(model, tmp_path)._load_settings()
    key = resident_key(settings, {})

    assert resident_key(dict(settings), {}) == key
    assert resident_key({**settings, "n_ctx": 512}, {}) != key
    assert resident_key({**settings, "seed": 7}, {}) != key
    assert resident_key(settings, {"GGML_NUM_THREADS": "1"}) != key
    assert resident_key(settings, {"UNRELATED": "1"}) == key
    os.utime(model, ns=(1, 1))
    assert resident_key(settings, {}) != key


def test_a_folder_others_may_enter_is_never_used(model: Path, tmp_path: Path, place: ResidentPlace) -> None:
    os.chmod(place.directory, 0o755)
    try:
        assert acquire(_client(model, tmp_path)._load_settings(), place) is None
        assert list(place.directory.iterdir()) == []
    finally:
        os.chmod(place.directory, 0o700)


async def test_the_socket_is_private_and_the_resident_ends_when_idle(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: ResidentPlace
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", COUNTING)))
    quick = ResidentPlace(directory=place.directory, idle_seconds=0.5)
    settings = _client(model, tmp_path)._load_settings()
    worker = acquire(settings, quick)
    assert worker is not None
    paths = ResidentPaths(place.directory, resident_key(settings))
    assert stat.S_IMODE(paths.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(paths.log.stat().st_mode) == 0o600
    worker.close()

    _wait_gone([worker.pid])
    assert not paths.socket.exists()


async def test_stop_all_ends_every_resident(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: ResidentPlace
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", COUNTING)))
    pids = []
    for n_ctx in (256, 512):
        worker = acquire(_client(model, tmp_path, n_ctx)._load_settings(), place)
        assert worker is not None
        pids.append(worker.pid)
        worker.close()

    assert stop_all(place.directory) == 2
    _wait_gone(pids)
    assert list(place.directory.glob("lm-*.sock")) == []


async def test_a_crash_of_the_resident_is_the_documented_error_and_the_next_run_gets_a_new_one(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: ResidentPlace
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", CRASH_ON_GENERATE)))
    with pytest.raises(LocalModelCrashedError) as raised:
        await _one_run(model, tmp_path, place)

    assert raised.value.signal_name == "SIGSEGV" and raised.value.exit_code == -11
    assert "while generating a reply" in str(raised.value)
    assert "lmsupply.extraBufferTypes: false" in str(raised.value)
    fresh = acquire(_client(model, tmp_path)._load_settings(), place)
    assert fresh is not None and _alive(fresh.pid)
    fresh.close()


@pytest.mark.local_model
async def test_the_bundled_model_evaluates_only_the_new_tokens_of_the_next_run(
    tmp_path: Path, place: ResidentPlace
) -> None:
    pytest.importorskip("llama_cpp")
    options = ChatOptions(temperature=0.0, max_output_tokens=4)
    runs = []
    for _ in range(2):
        LlamaCppChatClient(n_ctx=512, prefix_cache_max_bytes=0).start_early(place)
        client = LlamaCppChatClient(n_ctx=512, prefix_cache_max_bytes=0)  # no disk cache: only memory can help
        try:
            await client.get_response(HELLO, options)
        finally:
            client.close()
        runs.append(client.last_run)

    first, second = runs
    assert first is not None and second is not None
    assert first.evaluated_tokens == first.prompt_tokens > 10
    assert second.prompt_tokens == first.prompt_tokens
    assert second.evaluated_tokens <= 1 and second.reused_tokens == second.prompt_tokens - second.evaluated_tokens


def test_the_resident_keeps_no_api_key_and_no_folder_of_the_run_that_started_it(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: ResidentPlace
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", COUNTING)))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-of-this-run")
    monkeypatch.chdir(tmp_path)
    worker = acquire(_client(model, tmp_path)._load_settings(), place)
    assert worker is not None
    try:
        environment = Path(f"/proc/{worker.pid}/environ").read_bytes().split(b"\0")
        assert not [item for item in environment if item.startswith(b"OPENAI_API_KEY=")]
        assert f"PYTHONPATH={tmp_path / 'site'}".encode() in environment
        assert os.readlink(f"/proc/{worker.pid}/cwd") == "/"
    finally:
        worker.close()


WEDGED = """
import time
__version__ = "0.0-wedged"
class LogitsProcessorList(list):
    pass
class Llama:
    n_batch = 512
    def __init__(self, **kwargs):
        self.n_tokens = 0
    def create_chat_completion(self, **kwargs):
        time.sleep(3600)  # stuck, as native code can be: no stop reaches it
        yield {}
    def close(self):
        pass
"""


async def test_a_wedged_resident_is_ended_and_the_run_gets_a_worker_of_its_own(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: ResidentPlace
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", WEDGED)))
    monkeypatch.setattr("ironhive.adapters.llamacpp.resident.HELLO_SECONDS", 1.0)
    settings = _client(model, tmp_path)._load_settings()
    stuck = acquire(settings, place)
    assert stuck is not None
    assert stuck.send({"op": "load", "id": stuck.next_id(), "settings": settings})
    assert stuck.send({"op": "generate", "id": stuck.next_id(), "messages": []})
    stuck.close()  # the run ends; its resident stays stuck in the generation

    assert acquire(settings, place) is None
    _wait_gone([stuck.pid])
