"""Last-resort shrinking: tool results first, then the middle of long texts, then whole old units."""

from __future__ import annotations

import json

from ironhive.domain.context.fit import fit_to_limit
from ironhive.domain.context.tokens import DEFAULT_COUNTER, MessageTokenCache, count_messages
from ironhive.ports.chat import ChatMessage, Role
from tests.unit.context.context_builders import assistant, exchange, results, system, user


def fit(messages: list[ChatMessage], limit: int) -> list[ChatMessage]:
    fitted = fit_to_limit(messages, limit=limit, tokens=MessageTokenCache())
    assert count_messages(fitted.messages, DEFAULT_COUNTER) <= limit
    return fitted.messages


def test_a_request_that_fits_is_returned_as_it_is() -> None:
    history = [system("s"), user("hello")]
    result = fit_to_limit(history, limit=1000, tokens=MessageTokenCache())
    assert result.messages == history and result.parts_cut == 0 and result.messages_dropped == 0


def test_tool_results_are_cut_before_any_user_text() -> None:
    history = [system("s"), user("u" * 2000), *exchange("c1", "shell", "r" * 20_000), assistant("done")]
    fitted = fit(history, 2000)
    assert fitted[1] == history[1]
    [result] = results(fitted)
    assert "chars omitted to fit the context window" in result
    assert result.startswith("rrrr") and result.endswith("rrrr")


def test_a_huge_user_message_is_cut_in_the_middle_with_a_marker() -> None:
    pasted = "HEAD " + "p" * 100_000 + " TAIL"
    fitted = fit([system("s"), user("Never touch the tests/ folder."), assistant("ok"), user(pasted)], 4000)
    assert fitted[1].text == "Never touch the tests/ folder."
    latest = fitted[-1].text
    assert (
        latest.startswith("HEAD ") and latest.endswith(" TAIL") and "chars omitted to fit the context window" in latest
    )


def test_call_arguments_are_shortened_but_stay_valid_json() -> None:
    history = [
        user("write it"),
        *exchange("w", "write_file", "ok", arguments={"path": "big.txt", "content": "c" * 40_000, "mode": 1}),
        assistant("written"),
    ]
    fitted = fit(history, 1500)
    [call] = fitted[1].tool_calls
    parsed = json.loads(call.arguments_text)
    assert parsed["path"] == "big.txt" and parsed["mode"] == 1 and len(parsed["content"]) < 40_000
    assert dict(call.arguments or {}) == parsed


def test_an_oversized_system_prompt_is_cut_last() -> None:
    fitted = fit([system("S" * 50_000), user("u" * 250), assistant("a")], 3000)
    assert fitted[1].text == "u" * 250
    assert "chars omitted" in fitted[0].text


def test_whole_units_go_when_cutting_is_not_enough_keeping_the_first_and_latest_request() -> None:
    history = [system("s")]
    for turn in range(300):
        history += [user(f"request {turn} " + "q" * 200), assistant(f"answer {turn}")]
    history.append(user("the latest request"))
    fitted = fit(history, 2000)
    users = [message.text for message in fitted if message.role is Role.USER]
    assert users[0].startswith("request 0") and users[-1] == "the latest request"
    assert fitted[0] == history[0]


def test_the_characters_cut_are_counted_net_of_the_markers() -> None:
    pasted = "p" * 30_000
    history = [system("s"), user(pasted)]
    result = fit_to_limit(history, limit=2000, tokens=MessageTokenCache())
    assert result.parts_cut >= 1 and result.messages_dropped == 0
    assert result.chars_cut == len(pasted) - len(result.messages[-1].text)
