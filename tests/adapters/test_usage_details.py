"""Every provider mapping reports cached input and reasoning output as parts of the same totals."""

from __future__ import annotations

from typing import Any

from anthropic.types import MessageDeltaUsage, RawMessageDeltaEvent, RawMessageStartEvent
from anthropic.types import Usage as AnthropicUsage
from google.genai import types
from hypothesis import given
from hypothesis import strategies as st
from openai.types import CompletionUsage
from openai.types.responses import ResponseUsage

from ironhive.adapters.anthropic.responses import StreamAccumulator
from ironhive.adapters.anthropic.responses import to_usage as anthropic_usage
from ironhive.adapters.google.mapping import to_usage as gemini_usage
from ironhive.adapters.openai.mapping import to_usage as chat_usage
from ironhive.adapters.openai.responses_mapping import to_usage as responses_usage
from ironhive.ports.chat import Usage
from tests.support.openai_responses import usage_json

counts = st.integers(min_value=0, max_value=10**7)
maybe = st.none() | counts


@given(prompt=counts, completion=counts, cached=maybe, reasoning=maybe)
def test_openai_chat_details_are_within_the_totals(
    prompt: int, completion: int, cached: int | None, reasoning: int | None
) -> None:
    payload: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    payload["total_tokens"] = prompt + completion
    if cached is not None:
        payload["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        payload["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    usage = chat_usage(CompletionUsage.model_validate(payload))
    assert usage == Usage(
        input_tokens=prompt, output_tokens=completion, cached_input_tokens=cached, reasoning_tokens=reasoning
    )


def test_openai_chat_without_details_reports_them_unknown() -> None:
    usage = chat_usage(CompletionUsage(prompt_tokens=4, completion_tokens=2, total_tokens=6))
    assert usage.cached_input_tokens is None and usage.reasoning_tokens is None


@given(prompt=counts, completion=counts, cached=counts, reasoning=counts)
def test_openai_responses_details_are_within_the_totals(
    prompt: int, completion: int, cached: int, reasoning: int
) -> None:
    payload = usage_json((prompt, completion), cached=cached, reasoning=reasoning)
    usage = responses_usage(ResponseUsage.model_validate(payload))
    assert usage == Usage(
        input_tokens=prompt, output_tokens=completion, cached_input_tokens=cached, reasoning_tokens=reasoning
    )


@given(fresh=counts, creation=maybe, read=maybe, output=counts)
def test_anthropic_input_counts_all_prompt_tokens_and_reads_are_the_cached_part(
    fresh: int, creation: int | None, read: int | None, output: int
) -> None:
    raw = AnthropicUsage(
        input_tokens=fresh, output_tokens=output, cache_creation_input_tokens=creation, cache_read_input_tokens=read
    )
    usage = anthropic_usage(raw)
    assert usage.input_tokens == fresh + (creation or 0) + (read or 0)
    assert usage.cached_input_tokens == read
    assert usage.output_tokens == output and usage.reasoning_tokens is None


@given(fresh=counts, creation=counts, read=maybe, output=counts)
def test_anthropic_stream_reports_the_cache_reads_of_its_start(
    fresh: int, creation: int, read: int | None, output: int
) -> None:
    accumulator = StreamAccumulator(lambda: "id")
    start_usage = {"input_tokens": fresh, "output_tokens": 1}
    start_usage |= {"cache_creation_input_tokens": creation, "cache_read_input_tokens": read}
    message = {"id": "m", "type": "message", "role": "assistant", "model": "c", "content": [], "usage": start_usage}
    accumulator.feed(RawMessageStartEvent.model_validate({"type": "message_start", "message": message}))
    delta = RawMessageDeltaEvent(
        type="message_delta",
        delta={"stop_reason": "end_turn"},  # type: ignore[arg-type]
        usage=MessageDeltaUsage(output_tokens=output),
    )
    reported = [update.usage for update in accumulator.feed(delta) if update.usage is not None]
    assert reported == [
        Usage(input_tokens=fresh + creation + (read or 0), output_tokens=output, cached_input_tokens=read)
    ]


@given(prompt=maybe, candidates=maybe, thoughts=maybe, cached=maybe)
def test_gemini_output_includes_thoughts_and_the_details_are_parts(
    prompt: int | None, candidates: int | None, thoughts: int | None, cached: int | None
) -> None:
    metadata = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt,
        candidates_token_count=candidates,
        thoughts_token_count=thoughts,
        cached_content_token_count=cached,
    )
    usage = gemini_usage(metadata)
    if prompt is None and candidates is None and thoughts is None:
        assert usage is None
        return
    assert usage is not None
    assert usage.input_tokens == prompt and usage.cached_input_tokens == cached
    expected_output = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    assert usage.output_tokens == expected_output and usage.reasoning_tokens == thoughts


usages = st.builds(Usage, input_tokens=maybe, output_tokens=maybe, cached_input_tokens=maybe, reasoning_tokens=maybe)


@given(left=usages, right=usages)
def test_adding_usages_sums_every_known_count_and_keeps_unknown_only_when_both_are(left: Usage, right: Usage) -> None:
    total = left + right
    for name in ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens"):
        mine, theirs = getattr(left, name), getattr(right, name)
        expected = None if mine is None and theirs is None else (mine or 0) + (theirs or 0)
        assert getattr(total, name) == expected
