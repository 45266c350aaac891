"""The shipped encodings count exactly as tiktoken's own (loaded through its cache, with its patterns and hashes),
without any download; model names pick the right encoding; a damaged rank file is a clear error."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from ironhive.adapters.tokens import tiktoken_counter
from ironhive.adapters.tokens.selection import ModelTokenCounter, counter_for, encoding_for_model
from ironhive.adapters.tokens.tiktoken_counter import EncodingDataError, TiktokenCounter, parse_ranks, rank_file_bytes
from ironhive.domain.context.tokens import (
    DEFAULT_COUNTER,
    CalibratedCounter,
    MessageTokenCache,
    count_message,
    count_messages,
    text_bound,
)
from ironhive.ports.chat import ChatMessage, Role

DATA = Path(tiktoken_counter.__file__).parent / "data"
URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tiktoken.Encoding]]:
    """tiktoken's own encodings, its download answered from a cache filled with the shipped files (no network)."""
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name in ("o200k_base", "cl100k_base"):
        key = hashlib.sha1(URL.format(name).encode()).hexdigest()
        (cache / key).write_bytes(gzip.decompress((DATA / f"{name}.tiktoken.gz").read_bytes()))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        patch.setattr("tiktoken.load.read_file", _no_download)
        yield {name: tiktoken.get_encoding(name) for name in ("o200k_base", "cl100k_base")}


def _no_download(blobpath: str) -> bytes:
    raise AssertionError(f"tiktoken tried to download {blobpath}")


TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list("上下文窗口の文字한국어 \n\t{}();=<>|_'\"0123456789")),
    ),
    max_size=300,
) | st.lists(
    st.sampled_from(["<|endoftext|>", "def f(x):\n", "    return x", " the", "'s", "中文", "🙂", "\r\n", "  "]),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=TEXT, encoding=st.sampled_from(["o200k_base", "cl100k_base"]))
def test_counts_equal_tiktokens_for_generated_texts(
    reference: dict[str, tiktoken.Encoding], text: str, encoding: str
) -> None:
    assert TiktokenCounter(encoding).count(text) == len(reference[encoding].encode(text, disallowed_special=()))


@settings(max_examples=300, deadline=None)
@given(
    text=TEXT,
    encoding=st.sampled_from(["o200k_base", "o200k_harmony", "cl100k_base"]),
    report=st.none() | st.tuples(st.integers(0, 5000), st.integers(0, 20_000)),
    settle=st.booleans(),
)
def test_the_cheap_bound_is_never_below_the_count(
    text: str, encoding: str, report: tuple[int, int] | None, settle: bool
) -> None:
    counter = TiktokenCounter(encoding)
    assert counter.bound(text) >= counter.count(text)
    model = counter_for("openai", "gpt-4o-mini")
    assert text_bound(model, text) >= model.count(text)
    calibrated = CalibratedCounter(counter)
    if report is not None:
        calibrated.calibration.observe_later(lambda: report)
    if settle:
        assert calibrated.calibration.factor > 0  # learned now: the bound scales by it, not by the maximum
    bound = calibrated.bound(text)
    assert bound >= calibrated.count(text)
    assert MessageTokenCache(calibrated).bound(ChatMessage.of_text(Role.USER, text)) >= count_message(
        ChatMessage.of_text(Role.USER, text), calibrated
    )


def test_choosing_and_bounding_with_an_openai_models_counter_loads_no_encoding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tiktoken_counter, "_loaded", {})
    counter = counter_for("openai", "gpt-4o-mini")
    assert text_bound(counter, "上下文 🙂") == len("上下文 🙂".encode())
    assert tiktoken_counter._loaded == {}
    counter.count("x")
    assert set(tiktoken_counter._loaded) == {"o200k_base"}


CORPUS = [
    "The context window is measured in tokens, not characters. " * 20,
    "上下文窗口以令牌计算，而不是字符。压缩必须在正确的时刻发生。" * 20,
    "def fit(messages, limit):\n    while count(messages) > limit:\n        messages = messages[1:]\n" * 20,
    "Kontextfenster werden in Token gemessen; Umlaute wie ä, ö und ü zählen anders. " * 20,
    '{"path": "src/main.rs", "start_line": 10, "end_line": 42}\n' * 20,
]


@pytest.mark.parametrize("text", CORPUS)
def test_a_fixed_corpus_counts_within_two_percent_where_chars_over_four_does_not_always(
    reference: dict[str, tiktoken.Encoding], text: str
) -> None:
    real = len(reference["o200k_base"].encode(text, disallowed_special=()))
    assert abs(TiktokenCounter().count(text) - real) <= 0.02 * real
    if "令牌" in text:  # CJK: the old estimate is off by far more than 2 %
        assert abs(DEFAULT_COUNTER.count(text) - real) > 0.5 * real


def test_messages_count_their_texts_in_tokens_plus_the_overheads() -> None:
    counter = TiktokenCounter()
    messages = [ChatMessage.of_text(Role.USER, text) for text in CORPUS]
    assert count_messages(messages, counter) == 3 + sum(4 + counter.count(text) for text in CORPUS)


@pytest.mark.parametrize(
    ("provider", "model", "encoding"),
    [
        ("openai", "gpt-4o-mini", "o200k_base"),
        ("openai", "gpt-5", "o200k_base"),
        ("openai", "gpt-4", "cl100k_base"),
        ("azure", "my-deployment", "o200k_base"),  # OpenAI's models under a name of the user's choosing
        ("openai", "gpt-test", "o200k_base"),  # a newer OpenAI model tiktoken does not list yet
        ("ollama", "gpt-oss-20b", "o200k_harmony"),
        ("lmstudio", "openai/gpt-4o", "o200k_base"),
    ],
)
def test_openai_models_count_in_their_encoding(provider: str, model: str, encoding: str) -> None:
    counter = counter_for(provider, model)
    assert isinstance(counter, TiktokenCounter | ModelTokenCounter) and counter.encoding_name == encoding
    assert counter.count("上下文 windows") == TiktokenCounter(encoding).count("上下文 windows")


def test_an_openai_styled_name_the_table_does_not_know_counts_by_characters_elsewhere() -> None:
    counter = counter_for("ollama", "gpt-neo-unknown")
    assert isinstance(counter, ModelTokenCounter) and counter.encoding_name is None
    assert counter.count("x" * 10) == DEFAULT_COUNTER.count("x" * 10)


@pytest.mark.parametrize(
    ("provider", "model"),
    [("anthropic", "claude-sonnet-4-5"), ("google", "gemini-2.5-pro"), ("ollama", "llama3.2"), ("scripted", None)],
)
def test_other_models_fall_back_to_the_estimate(provider: str, model: str | None) -> None:
    assert counter_for(provider, model) is DEFAULT_COUNTER


def test_encodings_that_are_not_shipped_count_as_unknown() -> None:
    assert encoding_for_model("text-davinci-003") is None  # p50k_base: not shipped
    with pytest.raises(ValueError, match="not shipped"):
        TiktokenCounter("p50k_base")


def test_a_damaged_rank_file_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tiktoken_counter.ENCODINGS["cl100k_base"]
    monkeypatch.setitem(tiktoken_counter.ENCODINGS, "cl100k_base", dataclasses.replace(spec, sha256="0" * 64))
    with pytest.raises(EncodingDataError, match="damaged; reinstall"):
        rank_file_bytes("cl100k_base")
    with pytest.raises(EncodingDataError, match="not 'token rank'"):
        parse_ranks(b"YQ== 0\nYg==\n")
    with pytest.raises(EncodingDataError, match="malformed"):
        parse_ranks(b"YQ== zero\n")
