"""Doctor's local-inference check runs the model in a child: a crash, an error or a hang fails the check, with a fix."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from ironhive.adapters.config.schema import LMSupplySection
from ironhive.adapters.diagnostics.local_model import BUFFERS_NAME, NAME, local_model_check
from ironhive.adapters.diagnostics.report import Check
from ironhive.adapters.llamacpp.crash import SET_COMMAND, SETTING
from tests.adapters.test_llamacpp_worker import CRASH_ON_LOAD, fake_llama_cpp

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python")

HANGS_ON_LOAD = """
import time
__version__ = "0.0-hang"
class Llama:
    def __init__(self, **kwargs):
        time.sleep(120)
"""

REFUSES_THE_FILE = """
__version__ = "0.0-refuse"
class Llama:
    def __init__(self, **kwargs):
        raise ValueError("Failed to load model from file: " + kwargs["model_path"])
"""

ANSWERS = """
__version__ = "0.0-answer"
class LogitsProcessorList(list):
    pass
class Llama:
    n_batch = 512
    def __init__(self, **kwargs):
        self.n_tokens = 0
    def eval(self, tokens):
        self.n_tokens += len(tokens)
    def create_chat_completion(self, **kwargs):
        self.eval(list(range(1500)))
        yield {"choices": [{"delta": {"content": "OK"}, "finish_reason": None}]}
        yield {"choices": [{"delta": {}, "finish_reason": "stop"}]}
    def close(self):
        pass
"""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(2044))
    return path


def run_check(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    llama_source: str,
    section: LMSupplySection,
    *,
    verbose: bool = False,
    timeout: float = 60.0,
) -> list[Check]:
    """The check, with a stand-in llama.cpp in the worker process (the worker reads PYTHONPATH)."""
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", llama_source)))
    (tmp_path / "home").mkdir(exist_ok=True)
    return local_model_check(section, home=tmp_path / "home", environ={}, verbose=verbose, timeout=timeout)


def test_a_native_crash_while_loading_is_a_failed_check_naming_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Path
) -> None:
    (check,) = run_check(tmp_path, monkeypatch, CRASH_ON_LOAD, LMSupplySection(model_path=str(model)), verbose=True)

    assert (check.name, check.status) == (NAME, "error")
    assert "SIGSEGV" in check.message and "while loading the model" in check.message
    assert check.hint is not None and SETTING in check.hint and SET_COMMAND in check.hint


def test_with_extra_buffer_types_already_off_a_crash_points_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Path
) -> None:
    section = LMSupplySection(model_path=str(model), extra_buffer_types=False)
    (check,) = run_check(tmp_path, monkeypatch, CRASH_ON_LOAD, section)

    assert check.status == "error" and "already off" in check.message
    assert check.hint is not None and "lmsupply.modelPath" in check.hint and SETTING not in check.hint


def test_a_model_that_hangs_fails_the_check_in_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Path
) -> None:
    started = time.monotonic()
    (check,) = run_check(tmp_path, monkeypatch, HANGS_ON_LOAD, LMSupplySection(model_path=str(model)), timeout=1.0)
    elapsed = time.monotonic() - started

    assert check.status == "error"
    assert check.message == "The local model tiny.gguf did not load and answer within 1 s"
    assert check.hint is not None and SETTING in check.hint
    assert elapsed < 20  # the watchdog ended the worker, stuck in Llama(), long before its 120 s sleep


def test_a_file_llama_cpp_refuses_is_a_failed_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Path
) -> None:
    (check,) = run_check(tmp_path, monkeypatch, REFUSES_THE_FILE, LMSupplySection(model_path=str(model)))

    assert check.status == "error"
    assert check.message.startswith(f"Could not load the local model {model}: Failed to load model from file")
    assert check.hint is not None and "lmsupply.modelPath" in check.hint


def test_a_model_that_answers_passes_and_verbose_says_how_the_buffers_were_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Path
) -> None:
    quiet = run_check(tmp_path / "a", monkeypatch, ANSWERS, LMSupplySection(model_path=str(model)))
    assert [(check.status, check.message) for check in quiet] == [("pass", "Model tiny.gguf loaded and answered")]

    probed = run_check(tmp_path / "b", monkeypatch, ANSWERS, LMSupplySection(model_path=str(model)), verbose=True)
    assert [check.name for check in probed] == [NAME, BUFFERS_NAME]
    assert probed[0].message.startswith(f"Model {model} (2.0 KB) loaded and ")
    assert probed[1].message.startswith(("On, decided by the CPU probe: ", "Off, decided by the CPU probe: "))

    section = LMSupplySection(model_path=str(model), extra_buffer_types=False)
    configured = run_check(tmp_path / "c", monkeypatch, ANSWERS, section, verbose=True)
    assert configured[1].message == "Off: set by lmsupply.extraBufferTypes"


def test_without_load_only_the_file_is_looked_for(tmp_path: Path, model: Path) -> None:
    (check,) = local_model_check(
        LMSupplySection(model_path=str(model)), home=tmp_path, environ={}, verbose=False, load=False
    )

    assert (check.status, check.message) == ("pass", "Model file present: tiny.gguf")


@pytest.mark.local_model
def test_the_bundled_model_loads_and_answers(tmp_path: Path) -> None:
    checks = local_model_check(LMSupplySection(), home=tmp_path, environ={}, verbose=True)

    assert [(check.name, check.status) for check in checks] == [(NAME, "pass"), (BUFFERS_NAME, "pass")]
    assert "SmolLM2-135M-Instruct" in checks[0].message and " loaded and generated " in checks[0].message
    assert "decided by the CPU probe" in checks[1].message
