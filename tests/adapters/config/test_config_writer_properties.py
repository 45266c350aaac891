"""``set``/``unset`` on the global file as generated sequences: the file always reads as the same operations on a dict
say, and the user's comments stay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ironhive.adapters.config.files import global_config_path
from ironhive.adapters.config.writer import get_value, parse_value, set_value, unset_value

HEADER = "# my settings\n# second line of the header\n"
TRAILER = "# the very last line\n"
START = HEADER + "openai:  # paid\n  model: gpt-4o  # cheap one\n\n# local\nlmsupply:\n  enabled: false\n" + TRAILER

KEYS = (
    "openai.model",
    "openai.apiKey",
    "openai.endpoint",
    "anthropic.model",
    "lmsupply.enabled",
    "compaction.targetRatio",
    "compaction.maxContextTokens",
    "chatBehavior.maximumIterationsPerRequest",
    "custom.deeply.nested",
)
raw_values = st.one_of(
    st.sampled_from(("true", "FALSE", "0", "-7", "0.25", "1e3", "yes", "on", "null", "~", "a: b", "# x", "")),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=20),
)
operations = st.lists(st.tuples(st.sampled_from(("set", "unset")), st.sampled_from(KEYS), raw_values), max_size=12)


def apply(model: dict[str, Any], action: str, key: str, value: Any) -> None:
    segments = key.split(".")
    if action == "set":
        node = model
        for segment in segments[:-1]:
            node = node.setdefault(segment, {})
        node[segments[-1]] = value
        return
    trail = [model]
    for segment in segments[:-1]:
        child = trail[-1].get(segment)
        if not isinstance(child, dict):
            return
        trail.append(child)
    trail[-1].pop(segments[-1], None)
    for depth in range(len(trail) - 1, 0, -1):
        if not trail[depth]:
            del trail[depth - 1][segments[depth - 1]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=operations)
@example(steps=[("unset", "openai.model", ""), ("unset", "lmsupply.enabled", "")])  # every key gone
@example(steps=[("unset", "lmsupply.enabled", ""), ("set", "custom.deeply.nested", "1"), ("unset", "openai.model", "")])
def test_generated_set_and_unset_sequences_read_back_as_applied_and_keep_the_comments(
    tmp_path_factory: Any, steps: list[tuple[str, str, str]]
) -> None:
    home: Path = tmp_path_factory.mktemp("home")
    path = global_config_path(home)
    path.parent.mkdir(mode=0o700)
    path.write_text(START)
    model: dict[str, Any] = yaml.safe_load(START)
    emptied = False
    for action, key, raw in steps:
        if action == "set":
            written_key, value = set_value(home, key, raw)
            assert (written_key, value) == (key, parse_value(key, raw))
            assert get_value(home, key) == (key, value)
        else:
            unset_value(home, key)
        apply(model, action, key, parse_value(key, raw))
        text = path.read_text()
        assert (yaml.safe_load(text) or {}) == model
        assert text.startswith(HEADER)  # the header stays on top
        comments = [line for line in text.splitlines() if line.startswith("#")]
        assert [line for line in comments if line in KEPT] == list(KEPT)  # every free-standing comment, in order
        emptied = emptied or not model
        if not emptied:  # the last comment stays last (a file of comments only takes new keys at its end)
            assert text.endswith(TRAILER)


KEPT = ("# my settings", "# second line of the header", "# local", "# the very last line")
