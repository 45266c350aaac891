"""Table tests of the per-turn option merge."""

from __future__ import annotations

import pytest

from ironhive.domain.options import ChatBehavior, merge_options
from ironhive.ports.chat import ChatOptions, ToolSpec

READ = ToolSpec(name="read_file", description="", parameters={})
WRITE = ToolSpec(name="write_file", description="", parameters={})
BASE = ChatOptions(model="m", temperature=0.7, max_output_tokens=4096, tools=(READ, WRITE), tool_mode="auto")


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (None, BASE),
        (ChatOptions(), BASE),
        (
            ChatOptions(temperature=0.2),
            ChatOptions(model="m", temperature=0.2, max_output_tokens=4096, tools=(READ, WRITE), tool_mode="auto"),
        ),
        (
            ChatOptions(max_output_tokens=512),
            ChatOptions(model="m", temperature=0.7, max_output_tokens=512, tools=(READ, WRITE), tool_mode="auto"),
        ),
        (
            ChatOptions(tools=()),
            ChatOptions(model="m", temperature=0.7, max_output_tokens=4096, tools=(), tool_mode="auto"),
        ),
        (
            ChatOptions(tools=(READ,), tool_mode="require:read_file"),
            ChatOptions(
                model="m", temperature=0.7, max_output_tokens=4096, tools=(READ,), tool_mode="require:read_file"
            ),
        ),
        (
            ChatOptions(reasoning_effort="low"),
            ChatOptions(
                model="m",
                temperature=0.7,
                max_output_tokens=4096,
                tools=(READ, WRITE),
                tool_mode="auto",
                reasoning_effort="low",
            ),
        ),
        (
            ChatOptions(temperature=0.0),
            ChatOptions(model="m", temperature=0.0, max_output_tokens=4096, tools=(READ, WRITE), tool_mode="auto"),
        ),
        (
            ChatOptions(model="other"),
            ChatOptions(model="other", temperature=0.7, max_output_tokens=4096, tools=(READ, WRITE), tool_mode="auto"),
        ),
    ],
    ids=[
        "none",
        "empty",
        "temperature",
        "max-tokens",
        "no-tools",
        "tool-subset-and-mode",
        "effort",
        "zero-kept",
        "model",
    ],
)
def test_merge_replaces_set_fields_and_keeps_unset(override: ChatOptions | None, expected: ChatOptions) -> None:
    assert merge_options(BASE, override) == expected


def test_merge_does_not_change_the_base() -> None:
    merge_options(BASE, ChatOptions(temperature=0.1))
    assert BASE.temperature == 0.7


@pytest.mark.parametrize("field", ["maximum_iterations_per_request", "maximum_consecutive_errors_per_request"])
def test_chat_behavior_rejects_caps_below_one(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ChatBehavior(**{field: 0})


def test_chat_behavior_defaults() -> None:
    behavior = ChatBehavior()
    assert (behavior.maximum_iterations_per_request, behavior.maximum_consecutive_errors_per_request) == (10, 3)
