"""The llama.cpp worker process: the CPU probe, the load parameters it passes, frames, and native crashes."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ironhive.adapters.llamacpp import cpu_probe
from ironhive.adapters.llamacpp.client import LlamaCppChatClient
from ironhive.adapters.llamacpp.cpu_probe import ExtraBufferDecision, cpu_flags, decide_extra_buffer_types
from ironhive.adapters.llamacpp.cpu_settings import CpuSettings
from ironhive.adapters.llamacpp.crash import SETTING, crash_error
from ironhive.adapters.llamacpp.frames import FrameError, encode_frame, read_frame
from ironhive.adapters.llamacpp.worker import Worker, load_model
from ironhive.domain.errors import LocalModelCrashedError, ProviderError
from ironhive.ports.chat import ChatMessage, ChatOptions, Role

HELLO = (ChatMessage.of_text(Role.USER, "Say hello"),)
SHORT = ChatOptions(temperature=0.0, max_output_tokens=8)
AMX_CPU = frozenset({"fpu", "avx2", "amx_tile", "amx_bf16"})
PLAIN_CPU = frozenset({"fpu", "avx2"})


# --- the probe ---------------------------------------------------------------------------------------------------


def linux_probe(flags: frozenset[str], granted: bool, calls: list[str] | None = None) -> ExtraBufferDecision:
    def request() -> bool:
        if calls is not None:
            calls.append("arch_prctl")
        return granted

    return decide_extra_buffer_types(None, flags=lambda: flags, request_amx=request, system="Linux", machine="x86_64")


def test_amx_advertised_and_refused_turns_extra_buffers_off() -> None:
    decision = linux_probe(AMX_CPU, granted=False)

    assert decision.enabled is False
    assert decision.source == "probe" and "refused" in decision.reason


def test_amx_advertised_and_granted_keeps_extra_buffers_on() -> None:
    decision = linux_probe(AMX_CPU, granted=True)

    assert decision.enabled is True and "granted" in decision.reason


def test_no_amx_keeps_extra_buffers_on_without_asking_the_kernel() -> None:
    calls: list[str] = []

    assert linux_probe(PLAIN_CPU, granted=False, calls=calls).enabled is True
    assert calls == []  # the permission request is made only where AMX is advertised


def test_the_configured_setting_beats_the_probe() -> None:
    def never() -> bool:
        raise AssertionError("the probe must not run when the setting is given")

    forced_off = decide_extra_buffer_types(False, flags=lambda: PLAIN_CPU, request_amx=never)
    forced_on = decide_extra_buffer_types(True, flags=lambda: AMX_CPU, request_amx=never)

    assert (forced_off.enabled, forced_off.source) == (False, "config")
    assert (forced_on.enabled, forced_on.source) == (True, "config")


def test_other_systems_keep_extra_buffers_on() -> None:
    decision = decide_extra_buffer_types(None, flags=lambda: AMX_CPU, request_amx=lambda: False, system="Darwin")

    assert decision.enabled is True


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 amx_tile avx2\n\nprocessor\t: 1\nflags\t: fpu\n")

    assert cpu_flags(cpuinfo) == frozenset({"fpu", "sse2", "amx_tile", "avx2"})
    assert cpu_flags(tmp_path / "missing") == frozenset()


@pytest.mark.skipif(sys.platform != "linux", reason="arch_prctl is Linux only")
def test_the_real_permission_request_runs_in_a_child_process() -> None:
    # It changes the state of the process that makes it, so even the test makes it in a child.
    code = "from ironhive.adapters.llamacpp.cpu_probe import request_amx_permission as r; print(r())"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)

    assert completed.stdout.strip() in ("True", "False")


# --- the parameters passed to llama.cpp -------------------------------------------------------------------------


class FakeParams:
    """llama_model_params as far as the loader touches it."""

    def __init__(self) -> None:
        self.use_extra_bufts = True  # llama.cpp's default
        self.progress_callback: object = None


class FakeLow:
    """``llama_cpp.llama_cpp``: the low-level module the real Llama builds its model parameters from."""

    made: list[FakeParams]

    def __init__(self) -> None:
        self.made = []

    def llama_model_default_params(self) -> FakeParams:
        params = FakeParams()
        self.made.append(params)
        return params


class FakeModule:
    """A stand-in ``llama_cpp`` package whose Llama records what it was constructed with, as the real one does."""

    __version__ = "0.0-fake"

    def __init__(self) -> None:
        self.llama_cpp = FakeLow()
        self.constructed: list[dict[str, Any]] = []
        self.refuse_flash_attn = False  # as llama.cpp does where it cannot make a context with flash attention
        module = self

        class Llama:
            def __init__(self, **kwargs: Any) -> None:
                # Like llama-cpp-python 0.3.36: parameters come from llama_model_default_params(), kwargs beside it.
                self.model_params = module.llama_cpp.llama_model_default_params()
                module.constructed.append(kwargs)
                if kwargs.get("flash_attn") and module.refuse_flash_attn:
                    raise ValueError("Failed to create llama_context")
                self.n_threads = kwargs.get("n_threads") or 1
                self.n_threads_batch = kwargs.get("n_threads_batch") or 2
                self.n_batch = kwargs.get("n_batch") or 512

            def close(self) -> None:
                pass

        self.Llama = Llama


def fixed_tuning(n_threads: int | None) -> CpuSettings:
    return CpuSettings(n_threads=n_threads or 3, n_threads_batch=6, flash_attn=True, reason="injected")


def loaded_frame(
    probe: Any, module: FakeModule, tuning: Any = fixed_tuning, settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    out = io.BytesIO()
    worker = Worker(out, import_llama=lambda: module, probe=probe, tuning=tuning)
    load = {"model_path": "/models/m.gguf", "n_ctx": 256, **(settings or {})}
    worker.handle({"op": "load", "id": 1, "settings": load})
    stream = io.BytesIO(out.getvalue())
    frames = []
    while (frame := read_frame(stream)) is not None:
        frames.append(frame)
    assert frames[-1]["type"] == "loaded", frames
    return frames[-1]


@pytest.mark.parametrize(("granted", "expected"), [(False, False), (True, True)])
def test_the_worker_passes_the_probe_decision_to_llama_cpp(granted: bool, expected: bool) -> None:
    module = FakeModule()

    frame = loaded_frame(lambda override: linux_probe(AMX_CPU, granted=granted), module)

    # Asserted on the parameters the (stand-in) Llama actually built, and on what the worker reports it used.
    assert [params.use_extra_bufts for params in module.llama_cpp.made] == [expected]
    assert frame["params"]["use_extra_bufts"] is expected
    assert frame["params"]["extra_buffer_source"] == "probe"
    tuned = {"n_threads": 3, "n_threads_batch": 6, "flash_attn": True}
    assert module.constructed == [{"model_path": "/models/m.gguf", "n_ctx": 256, **tuned, "verbose": False}]


def test_the_worker_loads_with_the_tuned_threads_and_flash_attention() -> None:
    module = FakeModule()

    frame = loaded_frame(lambda override: linux_probe(PLAIN_CPU, granted=True), module)

    assert [
        (kwargs["n_threads"], kwargs["n_threads_batch"], kwargs["flash_attn"]) for kwargs in module.constructed
    ] == [(3, 6, True)]
    params = frame["params"]
    assert (params["n_threads"], params["n_threads_batch"], params["flash_attn"]) == (3, 6, True)
    assert params["cpu_settings_reason"] == "injected"


def test_configured_threads_reach_the_tuning_and_beat_it() -> None:
    module = FakeModule()
    asked: list[int | None] = []

    def tuning(n_threads: int | None) -> CpuSettings:
        asked.append(n_threads)
        return fixed_tuning(n_threads)

    loaded_frame(lambda override: linux_probe(PLAIN_CPU, granted=True), module, tuning, {"n_threads": 2, "n_batch": 64})

    assert asked == [2]
    assert [(kwargs["n_threads"], kwargs["n_batch"]) for kwargs in module.constructed] == [(2, 64)]


def test_a_context_refused_with_flash_attention_loads_without_it() -> None:
    module = FakeModule()
    module.refuse_flash_attn = True

    frame = loaded_frame(lambda override: linux_probe(PLAIN_CPU, granted=True), module)

    assert [kwargs["flash_attn"] for kwargs in module.constructed] == [True, False]
    assert frame["params"]["flash_attn"] is False


def test_load_model_restores_the_library_afterwards() -> None:
    module = FakeModule()
    original = module.llama_cpp.llama_model_default_params

    llama = load_model(module, {"model_path": "m.gguf"}, use_extra_bufts=False, on_progress=lambda value: None)

    assert llama.model_params.use_extra_bufts is False
    assert module.llama_cpp.llama_model_default_params == original
    assert module.llama_cpp.llama_model_default_params().use_extra_bufts is True


# --- frames ------------------------------------------------------------------------------------------------------


def test_frames_round_trip_and_reject_garbage() -> None:
    stream = io.BytesIO(encode_frame({"type": "delta", "text": "héllo"}) + encode_frame({"n": 1}))
    assert read_frame(stream) == {"type": "delta", "text": "héllo"}
    assert read_frame(stream) == {"n": 1}
    assert read_frame(stream) is None

    with pytest.raises(FrameError):
        read_frame(io.BytesIO(encode_frame({"a": 1})[:-2]))
    with pytest.raises(FrameError):
        read_frame(io.BytesIO(b"\xff\xff\xff\xff"))
    with pytest.raises(FrameError):
        read_frame(io.BytesIO(b"\x00\x00\x00\x02[]"))


# --- native crashes ----------------------------------------------------------------------------------------------

CRASH_ON_LOAD = """
import os, signal
__version__ = "0.0-crash"
class Llama:
    def __init__(self, **kwargs):
        os.kill(os.getpid(), signal.SIGSEGV)
"""

CRASH_ON_GENERATE = """
import os, signal
__version__ = "0.0-crash"
class LogitsProcessorList(list):
    pass
class Llama:
    def __init__(self, **kwargs):
        self.n_tokens = 0
    def create_chat_completion(self, **kwargs):
        os.kill(os.getpid(), signal.SIGSEGV)
    def close(self):
        pass
"""


def fake_llama_cpp(root: Path, source: str) -> Path:
    """A stand-in ``llama_cpp`` package under ``root``, to put on the worker's PYTHONPATH."""
    package = root / "llama_cpp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(source))
    return root


@pytest.mark.parametrize(
    ("source", "stage"), [(CRASH_ON_LOAD, "loading the model"), (CRASH_ON_GENERATE, "generating a reply")]
)
async def test_a_native_crash_is_an_error_naming_the_cause_and_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, stage: str
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", source)))
    client = LlamaCppChatClient(prefix_cache_dir=tmp_path / "cache")
    try:
        with pytest.raises(LocalModelCrashedError) as raised:
            await client.get_response(HELLO, SHORT)
        # The next call starts a fresh worker (which crashes the same way here).
        with pytest.raises(LocalModelCrashedError):
            await client.get_response(HELLO, SHORT)
    finally:
        client.close()

    error = raised.value
    assert isinstance(error, ProviderError) and error.provider == "local"
    assert error.signal_name == "SIGSEGV" and error.exit_code == -11
    message = str(error)
    assert "SIGSEGV" in message and "segmentation fault" in message
    assert f"while {stage}" in message
    assert "llama.cpp" in message and "CPU instructions" in message
    assert SETTING in message and "ironhive set lmsupply.extraBufferTypes false" in message


def test_the_crash_message_when_extra_buffers_were_already_off() -> None:
    error = crash_error(-4, stage="generating a reply", extra_buffer_types_used=False)

    assert error.signal_name == "SIGILL" and "illegal instruction" in str(error)
    assert "already off" in str(error)


def test_a_worker_that_exits_quotes_its_last_error() -> None:
    error = crash_error(
        1,
        stage="loading the model",
        extra_buffer_types_used=None,
        stderr_tail=["Traceback (most recent call last):", '  File "x.py", line 1', "MemoryError: out of memory"],
    )

    assert error.signal_name is None and error.exit_code == 1
    assert "status 1" in str(error) and "MemoryError: out of memory" in str(error)


def test_a_crash_is_one_failed_test_and_pytest_still_reports(tmp_path: Path) -> None:
    # A test that runs the model through the client, on a llama.cpp that segfaults: one failure, and the summary.
    test_file = tmp_path / "test_crashing_model.py"
    test_file.write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            from ironhive.adapters.llamacpp.client import LlamaCppChatClient
            from ironhive.ports.chat import ChatMessage, ChatOptions, Role

            async def test_model_answers():
                client = LlamaCppChatClient(prefix_cache_dir=Path({str(tmp_path / "cache")!r}))
                try:
                    await client.get_response((ChatMessage.of_text(Role.USER, "hi"),), ChatOptions(max_output_tokens=4))
                finally:
                    client.close()

            def test_after_it():
                assert True
            """
        )
    )
    environment = {**os.environ, "PYTHONPATH": str(fake_llama_cpp(tmp_path / "site", CRASH_ON_LOAD))}
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(test_file),
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "asyncio_mode=auto",
            "--rootdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        cwd=tmp_path,
        check=False,
    )

    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert re.search(r"1 failed, 1 passed", completed.stdout), completed.stdout
    assert "LocalModelCrashedError" in completed.stdout and SETTING in completed.stdout


# --- the real model ----------------------------------------------------------------------------------------------


@pytest.mark.local_model
async def test_the_setting_reaches_llama_cpp_and_the_model_still_answers(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    client = LlamaCppChatClient(extra_buffer_types=False, prefix_cache_dir=tmp_path)
    try:
        response = await client.get_response(HELLO, SHORT)
        params = client.load_parameters
    finally:
        client.close()

    assert response.message.text.strip()
    # Read back by the worker from llama-cpp-python's model parameters after loading.
    assert params is not None
    assert params["use_extra_bufts"] is False and params["extra_buffer_source"] == "config"


@pytest.mark.local_model
async def test_by_default_the_probe_decides(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    client = LlamaCppChatClient(prefix_cache_dir=tmp_path)
    try:
        await client.warm_up()
        params = client.load_parameters
    finally:
        client.close()

    assert params is not None and params["extra_buffer_source"] == "probe"
    if "amx_tile" not in cpu_probe.cpu_flags():
        assert params["use_extra_bufts"] is True  # no AMX here: the fast path stays on


@pytest.mark.local_model
async def test_after_a_crash_the_next_call_starts_a_working_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("llama_cpp")
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", CRASH_ON_GENERATE)))
    client = LlamaCppChatClient(prefix_cache_dir=tmp_path / "cache")
    try:
        with pytest.raises(LocalModelCrashedError):
            await client.get_response(HELLO, SHORT)
        monkeypatch.delenv("PYTHONPATH")
        response = await client.get_response(HELLO, SHORT)
    finally:
        client.close()

    assert response.message.text.strip()
