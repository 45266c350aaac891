"""The goal reminder (§D.9 step 5): threshold, at most one, the 500-char cut and the original request."""

from __future__ import annotations

from ironhive.domain.context.config import GoalReminderConfig
from ironhive.domain.context.goal import is_goal_reminder, reminder_message, with_goal_reminder
from ironhive.ports.chat import ChatMessage, Role
from tests.unit.context.context_builders import assistant, system, user

SETTINGS = GoalReminderConfig()


def chat(pairs: int, first: str = "Fix the parser.", latest: str | None = None) -> list[ChatMessage]:
    history = [system("sys")]
    for index in range(pairs):
        text = first if index == 0 else (latest if latest and index == pairs - 1 else f"Request {index}")
        history += [user(text), assistant(f"Answer {index}")]
    return history


def reminders(messages: list[ChatMessage]) -> list[str]:
    return [message.text for message in messages if is_goal_reminder(message)]


def test_no_reminder_below_six_non_system_messages() -> None:
    assert reminders(with_goal_reminder(chat(2), SETTINGS)) == []
    history = [*chat(2), user("Request 2")]  # 5 non-system messages
    assert reminders(with_goal_reminder(history, SETTINGS)) == []


def test_one_reminder_at_the_end_from_six_messages() -> None:
    prepared = with_goal_reminder(chat(3), SETTINGS)
    assert prepared[-1].role is Role.USER
    assert reminders(prepared) == ["[REMINDER] Current goal: Request 2\nOriginal request: Fix the parser."]


def test_the_original_request_is_omitted_when_it_is_the_latest() -> None:
    history = [user("Only request"), assistant("a"), assistant("b"), assistant("c"), assistant("d"), assistant("e")]
    assert reminders(with_goal_reminder(history, SETTINGS)) == ["[REMINDER] Current goal: Only request"]
    plain = GoalReminderConfig(include_original_request=False)
    assert reminders(with_goal_reminder(chat(3), plain)) == ["[REMINDER] Current goal: Request 2"]


def test_preparing_again_keeps_exactly_one_reminder_for_the_latest_request() -> None:
    prepared = with_goal_reminder(chat(3), SETTINGS)
    for _ in range(3):
        prepared = with_goal_reminder(prepared, SETTINGS)
    assert len(reminders(prepared)) == 1
    grown = with_goal_reminder([*prepared, user("Now the lexer"), assistant("ok")], SETTINGS)
    assert reminders(grown) == ["[REMINDER] Current goal: Now the lexer\nOriginal request: Fix the parser."]


def test_long_requests_are_cut_to_500_chars() -> None:
    latest = "L" * 800
    first = "F" * 600
    text = reminders(with_goal_reminder(chat(3, first=first, latest=latest), SETTINGS))[0]
    goal_line, original_line = text.split("\n")
    assert goal_line == "[REMINDER] Current goal: " + "L" * 497 + "..."
    assert original_line == "Original request: " + "F" * 497 + "..."
    exact = reminders(with_goal_reminder(chat(3, latest="E" * 500), SETTINGS))[0]
    assert exact.split("\n")[0] == "[REMINDER] Current goal: " + "E" * 500


def test_disabled_reminders_and_conversations_without_a_request() -> None:
    assert reminders(with_goal_reminder(chat(4), GoalReminderConfig(enabled=False))) == []
    assert reminder_message([assistant("a")] * 8, SETTINGS) is None
