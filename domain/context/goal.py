"""Goal reminder: one injected user message restating the current (and the original) request at the end of a request."""

from __future__ import annotations

from collections.abc import Sequence

from ironhive.domain.context.config import GoalReminderConfig
from ironhive.ports.chat import ChatMessage, Role, TextPart

REMINDER_PREFIX = "[REMINDER] Current goal: "
ORIGINAL_PREFIX = "Original request: "


def is_goal_reminder(message: ChatMessage) -> bool:
    """Whether ``message`` is a reminder an earlier preparation injected.

    Recognised by its text rather than by identity, so a reminder survives being stored and read back (a caller that
    re-prepares a prepared request) and is still removed before a new one is composed.
    """
    if message.role is not Role.USER:
        return False
    first = next((part for part in message.parts if isinstance(part, TextPart)), None)
    return first is not None and first.text.startswith(REMINDER_PREFIX)


def drop_injected(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Return ``messages`` without injected reminders (a new list)."""
    return [message for message in messages if not is_goal_reminder(message)]


def shorten(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` chars, the last three being "..." when it was longer."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def user_requests(messages: Sequence[ChatMessage]) -> tuple[str | None, str | None]:
    """The first and the latest user request of the conversation (non-blank, reminders excluded)."""
    first = next((text for message in messages if (text := _request(message))), None)
    latest = next((text for message in reversed(messages) if (text := _request(message))), None)
    return first, latest


def _request(message: ChatMessage) -> str | None:
    if message.role is not Role.USER or is_goal_reminder(message):
        return None
    text = message.text
    return text if text.strip() else None


def reminder_message(
    messages: Sequence[ChatMessage],
    config: GoalReminderConfig,
    *,
    requests: tuple[str | None, str | None] | None = None,
) -> ChatMessage | None:
    """Compose the reminder for ``messages``, ignoring the message-count threshold.

    The text is "[REMINDER] Current goal: <latest request>" and, when the session's first request differs from the
    latest, a second line "Original request: <first request>": the first request usually states the session's
    standing constraints, and compaction must never make the model lose them. Each request is cut to
    ``max_goal_chars``.

    Args:
        messages: The conversation.
        config: The reminder settings.
        requests: The first and latest requests when the caller already knows them (taken from the full history, so
            later cuts of the messages do not shorten them).

    Returns:
        The reminder, or ``None`` when reminders are off or there is no user request.
    """
    if not config.enabled:
        return None
    first, latest = requests if requests is not None else user_requests(messages)
    if latest is None:
        return None
    text = REMINDER_PREFIX + shorten(latest, config.max_goal_chars)
    if config.include_original_request and first is not None and first != latest:
        text += "\n" + ORIGINAL_PREFIX + shorten(first, config.max_goal_chars)
    return ChatMessage.of_text(Role.USER, text)


def should_remind(messages: Sequence[ChatMessage], config: GoalReminderConfig) -> bool:
    """Whether ``messages`` are long enough for a reminder (at least ``min_messages`` non-system messages)."""
    if not config.enabled:
        return False
    count = 0
    for message in messages:
        if message.role is not Role.SYSTEM and not is_goal_reminder(message):
            count += 1
            if count >= config.min_messages:
                return True
    return config.min_messages == 0


def with_goal_reminder(messages: Sequence[ChatMessage], config: GoalReminderConfig) -> list[ChatMessage]:
    """Return ``messages`` without earlier reminders and, when due, with one fresh reminder appended."""
    kept = drop_injected(messages)
    reminder = reminder_message(kept, config) if should_remind(kept, config) else None
    return [*kept, reminder] if reminder is not None else kept
