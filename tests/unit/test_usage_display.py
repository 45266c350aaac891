"""Cached input and reasoning tokens shown by the CLI: only when reported, as parts of the input and output totals."""

from __future__ import annotations

import io
import json

from hypothesis import given
from hypothesis import strategies as st

from ironhive.cli.render import RunJsonRenderer, TextRenderer, usage_json, usage_text
from ironhive.cli.statistics import SessionStatistics
from ironhive.domain.turn import TurnRecord
from ironhive.ports.chat import Usage

maybe = st.none() | st.integers(min_value=0, max_value=10**7)
usages = st.builds(Usage, input_tokens=maybe, output_tokens=maybe, cached_input_tokens=maybe, reasoning_tokens=maybe)


@given(usage=usages)
def test_json_usage_names_the_details_only_when_reported(usage: Usage) -> None:
    shown = usage_json(usage)
    if usage.total_tokens is None:
        assert shown is None
        return
    assert shown is not None
    assert shown["inputTokens"] == usage.input_tokens and shown["outputTokens"] == usage.output_tokens
    assert shown.get("cachedInputTokens") == usage.cached_input_tokens
    assert ("cachedInputTokens" in shown) == (usage.cached_input_tokens is not None)
    assert shown.get("reasoningTokens") == usage.reasoning_tokens
    assert ("reasoningTokens" in shown) == (usage.reasoning_tokens is not None)


@given(usage=usages)
def test_run_json_usage_is_snake_case_with_the_same_details(usage: Usage) -> None:
    out = io.StringIO()
    RunJsonRenderer(out).finish(TurnRecord(content="hi", usage=usage), None)
    shown = json.loads(out.getvalue())["usage"]
    if usage.total_tokens is None:
        assert shown is None
        return
    assert shown.get("cached_input_tokens") == usage.cached_input_tokens
    assert ("cached_input_tokens" in shown) == (usage.cached_input_tokens is not None)
    assert shown.get("reasoning_tokens") == usage.reasoning_tokens
    assert ("reasoning_tokens" in shown) == (usage.reasoning_tokens is not None)
    assert shown["total_tokens"] == usage.total_tokens


def test_show_tokens_line_puts_each_part_beside_its_total() -> None:
    out = io.StringIO()
    renderer = TextRenderer(show_thinking=False, show_tokens=True, plain=True, out=out, err=io.StringIO())
    usage = Usage(input_tokens=812, output_tokens=40, cached_input_tokens=512, reasoning_tokens=32)
    renderer.finish(TurnRecord(content="", usage=usage), None)
    assert out.getvalue().endswith("Tokens: 812 in (512 cached) / 40 out (32 reasoning) / 852 total\n")
    assert usage_text(Usage(input_tokens=3)) == "Tokens: 3 in / ? out / 3 total"


@given(reported=st.lists(usages, max_size=5))
def test_statistics_rows_add_the_parts_only_when_some_were_reported(reported: list[Usage]) -> None:
    statistics = SessionStatistics(model="gpt-5-mini")
    for usage in reported:
        statistics.add(usage)
    rows = dict(statistics.rows())
    cached = sum(usage.cached_input_tokens or 0 for usage in reported)
    reasoning = sum(usage.reasoning_tokens or 0 for usage in reported)
    assert rows.get("  Cached") == (f"{cached:,}" if cached else None)
    assert rows.get("  Reasoning") == (f"{reasoning:,}" if reasoning else None)
    assert rows["Input Tokens"] == f"{sum(usage.input_tokens or 0 for usage in reported):,}"
    labels = [label for label, _ in statistics.rows()]
    assert labels.index("Input Tokens") < labels.index("Output Tokens") < labels.index("Total Tokens")
