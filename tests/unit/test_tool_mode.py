"""The one reading of a tool mode, and each provider's spelling of it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.anthropic.mapping import to_tool_choice as anthropic_choice
from ironhive.adapters.google.mapping import to_function_calling_config
from ironhive.adapters.openai.mapping import to_tool_choice as chat_choice
from ironhive.adapters.openai.responses_mapping import to_tool_choice as responses_choice
from ironhive.domain.errors import ConfigurationError
from ironhive.domain.tool_mode import ToolMode, parse_tool_mode

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True)


@given(NAMES)
def test_a_required_tool_is_named_alike_by_every_provider(name: str) -> None:
    assert parse_tool_mode(f"require: {name} ") == ToolMode(kind="tool", tool=name)
    assert chat_choice(f"require:{name}") == {"type": "function", "function": {"name": name}}
    assert responses_choice(f"require:{name}") == {"type": "function", "name": name}
    assert anthropic_choice(f"require:{name}") == {"type": "tool", "name": name}
    config = to_function_calling_config(f"require:{name}")
    assert (str(config.mode), config.allowed_function_names) == ("FunctionCallingConfigMode.ANY", [name])


@pytest.mark.parametrize(
    ("mode", "chat", "anthropic", "google"),
    [("auto", "auto", "auto", "AUTO"), ("none", "none", "none", "NONE"), ("require_any", "required", "any", "ANY")],
)
def test_the_fixed_modes(mode: str, chat: str, anthropic: str, google: str) -> None:
    assert chat_choice(mode) == responses_choice(mode) == chat
    assert anthropic_choice(mode) == {"type": anthropic}
    config = to_function_calling_config(mode)
    assert (str(config.mode).rsplit(".", 1)[-1], config.allowed_function_names) == (google, None)


@given(st.text(max_size=20).filter(lambda text: text not in ("auto", "none", "require_any")))
def test_anything_else_is_refused_by_every_provider(text: str) -> None:
    if text.startswith("require:") and text.removeprefix("require:").strip():
        return
    for mapping in (parse_tool_mode, chat_choice, responses_choice, anthropic_choice, to_function_calling_config):
        with pytest.raises(ConfigurationError, match="unknown tool mode"):
            mapping(text)
