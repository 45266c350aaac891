"""The head/tail cut of big tool results (§D.9 step 2): both marker forms, CRLF, and the char-limit fallback."""

from __future__ import annotations

from ironhive.domain.context.tool_results import cut_message_results, cut_tool_result
from tests.unit.context.context_builders import exchange, lines


def cut(text: str, max_chars: int = 1000, head: int = 5, tail: int = 3) -> str:
    return cut_tool_result(text, max_chars=max_chars, head_lines=head, tail_lines=tail)


def test_results_up_to_the_limit_are_unchanged() -> None:
    text = "x" * 1000
    assert cut(text) is text


def test_many_lines_keep_head_and_tail_around_a_marker_paragraph() -> None:
    text = lines(100, width=40)
    result = cut(text)
    head, marker, tail = result.split("\n\n")
    assert head.splitlines() == text.splitlines()[:5]
    assert tail.splitlines() == text.splitlines()[-3:]
    assert marker == f"[... 92 lines omitted ({len(text)} chars total) ...]"


def test_crlf_is_normalised_and_the_total_counts_the_original() -> None:
    text = lines(100, width=40).replace("\n", "\r\n")
    result = cut(text)
    assert "\r" not in result
    assert f"[... 92 lines omitted ({len(text)} chars total) ...]" in result
    assert result.startswith("line 00000")
    assert result.endswith("line 00099 ".ljust(40, "x"))


def test_too_few_lines_cut_at_the_char_limit() -> None:
    text = "\n".join(["y" * 500] * 8)  # 8 lines ≤ 5 + 3
    result = cut(text)
    assert result == text[:1000] + f"\n\n[... truncated ({len(text)} chars total) ...]"


def test_enormous_kept_lines_fall_back_to_the_char_cut() -> None:
    text = "\n".join(["z" * 400] * 20)  # 20 lines > 8, but 8 kept lines are 3200 chars > 1000
    assert cut(text) == text[:1000] + f"\n\n[... truncated ({len(text)} chars total) ...]"


def test_zero_head_or_tail_lines() -> None:
    text = lines(50, width=40)
    assert cut(text, head=0, tail=2).split("\n\n")[0] == f"[... 48 lines omitted ({len(text)} chars total) ...]"
    assert cut(text, head=2, tail=0).split("\n\n")[-1] == f"[... 48 lines omitted ({len(text)} chars total) ...]"


def test_the_defaults_keep_fifty_and_twenty_lines() -> None:
    text = lines(2000, width=40)
    result = cut_tool_result(text, max_chars=30000, head_lines=50, tail_lines=20)
    assert f"[... 1930 lines omitted ({len(text)} chars total) ...]" in result
    assert len(result) < 30000


def test_messages_are_rebuilt_only_when_a_result_is_cut() -> None:
    small = exchange("c1", "shell", "short")[1]
    assert cut_message_results(small, max_chars=100, head_lines=1, tail_lines=1) is small
    big = exchange("c2", "shell", lines(30))[1]
    rebuilt = cut_message_results(big, max_chars=200, head_lines=1, tail_lines=1)
    assert rebuilt is not big
    assert rebuilt.tool_results[0].call_id == "c2" and "28 lines omitted" in rebuilt.tool_results[0].result
