"""Observation masking (§D.9 step 3): protected turns and rounds, minimum length and the placeholder."""

from __future__ import annotations

from ironhive.domain.context.masking import mask_observations, mask_placeholder
from ironhive.ports.chat import ChatMessage, ToolResultPart
from tests.unit.context.context_builders import assistant, exchange, results, system, user

BIG = "r" * 300


def turns(count: int, result: str = BIG) -> list[ChatMessage]:
    history = [system("sys")]
    for turn in range(count):
        history += [user(f"request {turn}"), *exchange(f"c{turn}", "shell", f"{turn}:{result}"), assistant("ok")]
    return history


def masked_flags(history: list[ChatMessage], **settings: int | None) -> list[bool]:
    return [text.startswith("[Masked: ") for text in results(mask_observations(history, **settings))]  # type: ignore[arg-type]


def test_results_before_the_third_most_recent_user_turn_are_masked() -> None:
    assert masked_flags(turns(5)) == [True, True, False, False, False]


def test_with_fewer_user_turns_than_protected_nothing_is_masked() -> None:
    assert masked_flags(turns(3)) == [False, False, False]
    assert masked_flags(turns(2)) == [False, False]


def test_zero_protected_turns_masks_every_result() -> None:
    assert masked_flags(turns(2), protected_turns=0) == [True, True]


def test_short_results_are_never_masked() -> None:
    history = turns(5, result="short")
    assert masked_flags(history) == [False] * 5
    assert masked_flags(turns(5, result="x" * 190), min_length=190) == [True, True, False, False, False]


def test_protected_rounds_mask_older_rounds_even_inside_a_protected_turn() -> None:
    history = [user("one request")]
    for step in range(4):
        history += exchange(f"c{step}", "read_file", f"{step}:{BIG}")
    assert masked_flags(history) == [False] * 4
    assert masked_flags(history, protected_rounds=2) == [True, True, False, False]
    assert masked_flags(history, protected_rounds=0) == [True] * 4
    assert masked_flags(history, protected_rounds=9) == [False] * 4


def test_rounds_are_counted_across_turns() -> None:
    assert masked_flags(turns(2), protected_rounds=1) == [True, False]


def test_the_placeholder_names_the_tool_size_arguments_and_the_way_back() -> None:
    history = [user("a"), *exchange("c1", "grep_files", "m\n" * 150, arguments={"pattern": "TODO", "path": "src"})]
    history += [user("b"), user("c"), user("d")]
    text = results(mask_observations(history))[0]
    assert text == (
        '[Masked: grep_files result, 300 chars, ~151 lines — arguments: {"pattern": "TODO", "path": "src"}. '
        "Call the tool again if you need it.]"
    )


def test_long_arguments_are_cut_to_two_hundred_chars_and_unknown_calls_say_so() -> None:
    history = [*exchange("c1", "write_file", BIG, arguments={"path": "a.py", "content": "q" * 500})]
    history += [user("b"), user("c"), user("d")]
    text = results(mask_observations(history))[0]
    arguments = text.split("arguments: ", 1)[1].split(". Call the tool", 1)[0]
    assert len(arguments) == 200 and arguments.endswith("...")
    orphan = ToolResultPart(call_id="gone", name="shell", result=BIG, success=True)
    assert "arguments: unknown" in mask_placeholder(orphan, None)


def test_masking_leaves_the_input_alone_and_keeps_call_ids() -> None:
    history = turns(5)
    snapshot = list(history)
    masked = mask_observations(history)
    assert history == snapshot
    assert [part.call_id for message in masked for part in message.tool_results] == [f"c{n}" for n in range(5)]
    again = mask_observations(masked)
    assert results(again) == results(masked)
