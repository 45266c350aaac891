"""The local model's loading and prompt-reading progress: a line on a terminal's stderr, erased before the answer.

The line itself is tested on in-memory streams, the client that erases it with a stand-in llama.cpp in the real worker
process, and the CLI on a real pseudo-terminal with the bundled model (up to the first progress line, then Ctrl+C: a
full answer takes minutes on a busy two-core machine).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ironhive.adapters.llamacpp.progress import LocalProgress
from ironhive.cli.local_progress import ERASE_LINE, LocalProgressLine, ProgressLlamaCppChatClient, progress_text
from ironhive.domain.errors import LocalModelCrashedError
from ironhive.ports.chat import ChatMessage, ChatOptions, Role
from ironhive.providers import local_inference_available
from tests.adapters.diagnostics.test_local_inference_check import ANSWERS
from tests.adapters.test_llamacpp_worker import fake_llama_cpp
from tests.support.terminal import terminal

HELLO = (ChatMessage.of_text(Role.USER, "hi"),)
SHORT = ChatOptions(temperature=0.0, max_output_tokens=4)

PREFILL_THEN_CRASH = """
import os, signal
__version__ = "0.0-crash"
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
        os.kill(os.getpid(), signal.SIGSEGV)
    def close(self):
        pass
"""


class TerminalStream(io.StringIO):
    """An in-memory stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def loading(done: int) -> LocalProgress:
    return LocalProgress(stage="loading", done=done, total=100)


def prefill(done: int, total: int) -> LocalProgress:
    return LocalProgress(stage="prefill", done=done, total=total)


# --- the line --------------------------------------------------------------------------------------------------


def test_each_report_replaces_the_line_and_clear_erases_it() -> None:
    stream = TerminalStream()
    line = LocalProgressLine(stream, width=100)

    line.report(loading(45))
    line.report(prefill(512, 1834))
    shown = stream.getvalue()
    assert shown.split(ERASE_LINE) == ["", "⠋ Loading the local model… 45%", "⠙ Reading the prompt… 512/1,834 tokens"]
    assert line.shown

    line.clear()
    assert stream.getvalue() == shown + ERASE_LINE and not line.shown
    line.clear()  # nothing is shown: nothing is written
    assert stream.getvalue() == shown + ERASE_LINE


def test_what_each_stage_says_when_it_is_done() -> None:
    assert progress_text(loading(100)) == "Local model loaded; reading the prompt…"
    assert progress_text(prefill(1834, 1834)) == "Read the prompt (1,834 tokens); writing the answer…"


def test_nothing_is_written_when_the_stream_is_not_a_terminal() -> None:
    stream = io.StringIO()
    line = LocalProgressLine(stream, width=100)

    line.report(loading(10))
    line.report(prefill(512, 2048))
    line.clear()

    assert stream.getvalue() == "" and not line.shown


def test_the_line_is_cut_to_the_terminal_width() -> None:
    stream = TerminalStream()
    LocalProgressLine(stream, width=20).report(prefill(512, 1834))

    assert stream.getvalue() == ERASE_LINE + "⠋ Reading the promp"


def test_while_paused_reports_are_not_shown_and_what_was_shown_is_erased() -> None:
    stream = TerminalStream()
    line = LocalProgressLine(stream, width=100)
    line.report(loading(10))

    with line.paused():
        line.report(loading(50))
    assert stream.getvalue().split(ERASE_LINE) == ["", "⠋ Loading the local model… 10%", ""]

    line.report(loading(60))
    assert stream.getvalue().endswith(ERASE_LINE + "⠙ Loading the local model… 60%")


# --- the client that erases it (a stand-in llama.cpp in the real worker process) -----------------------------------


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + bytes(2044))
    return path


async def test_prefill_progress_is_erased_before_the_first_update_reaches_the_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Path
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", ANSWERS)))
    stream = TerminalStream()
    line = LocalProgressLine(stream, width=100)
    client = ProgressLlamaCppChatClient(line=line, model_path=model)
    seen_at_first_update: list[tuple[str, bool]] = []
    texts: list[str] = []
    try:
        async for update in client.get_streaming_response(HELLO, SHORT):
            if not seen_at_first_update:
                seen_at_first_update.append((stream.getvalue(), line.shown))
            texts.append(update.text_delta)
    finally:
        client.close()

    ((written, shown),) = seen_at_first_update
    # The worker evaluated 1,500 prompt tokens in chunks of 512 and reported each chunk.
    assert "Reading the prompt… 512/1,500 tokens" in written and "Read the prompt (1,500 tokens)" in written
    assert written.endswith(ERASE_LINE) and shown is False
    assert "".join(texts) == "OK"


async def test_a_crash_after_prefill_still_erases_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: Path
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_llama_cpp(tmp_path / "site", PREFILL_THEN_CRASH)))
    stream = TerminalStream()
    line = LocalProgressLine(stream, width=100)
    client = ProgressLlamaCppChatClient(line=line, model_path=model)
    try:
        with pytest.raises(LocalModelCrashedError):
            await client.get_response(HELLO, SHORT)
    finally:
        client.close()

    assert "Reading the prompt… 512/1,500 tokens" in stream.getvalue()
    assert stream.getvalue().endswith(ERASE_LINE) and not line.shown


# --- the CLI on a pseudo-terminal, with the bundled model --------------------------------------------------------


TERM = {"TERM": "xterm", "NO_COLOR": ""}
"""A terminal that allows escape sequences (the test environment sets ``NO_COLOR``; under it the line is blanked with
spaces, see the unit tests); its size, 100 columns, comes from the pseudo-terminal."""

needs_local = pytest.mark.skipif(not local_inference_available(), reason="needs the `local` extra")


@needs_local
@pytest.mark.local_model
def test_a_one_shot_run_shows_loading_progress_on_the_terminal_and_erases_it(tmp_path: Path) -> None:
    with terminal(tmp_path, "-p", "hi", "--provider", "local", home=tmp_path, env=TERM) as run:
        run.read_until("Loading the local model…".encode(), timeout=30)
        run.interrupt()
        code = run.wait(timeout=90)
        seen = run.seen

    assert code == 130, seen[-800:]
    last_progress = max(seen.rfind(text.encode()) for text in ("Loading the local", "Local model", "the prompt"))
    assert seen.rfind(ERASE_LINE.encode()) > last_progress  # the turn ended: the line was erased


@needs_local
@pytest.mark.local_model
def test_with_json_output_progress_goes_to_the_terminal_and_stdout_holds_only_json(tmp_path: Path) -> None:
    args = ("-p", "hi", "--provider", "local", "-o", "json")
    with terminal(tmp_path, *args, home=tmp_path, env=TERM, stdout_pipe=True) as run:
        run.read_until("Loading the local model…".encode(), timeout=30)
        run.interrupt()
        code = run.wait(timeout=90)
        out = run.piped_stdout()

    assert code == 130
    # The cancelled run's one JSON object, and not a byte of the progress shown meanwhile.
    assert [json.loads(line) for line in out.decode().splitlines()] == [{"error": "cancelled", "code": 130}]
