"""The history compactor: never splitting calls from results, keeping user messages and protected outputs,
summaries and their fallback, and the anchored state block."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ironhive.domain.context.anchor import AnchorState, extract_state
from ironhive.domain.context.compaction import HistoryCompactor
from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.tokens import MessageTokenCache
from ironhive.ports.chat import ChatMessage, Role, ToolResultPart
from tests.unit.context.context_builders import assistant, exchange, system, user


def compactor(summarizer: object = None, **settings: object) -> HistoryCompactor:
    config = CompactionConfig(**settings)  # type: ignore[arg-type]
    return HistoryCompactor(config, tokens=MessageTokenCache(), summarizer=summarizer)  # type: ignore[arg-type]


def session() -> list[ChatMessage]:
    """system, 4 turns of request + shell exchange (~500 tokens) + read_file exchange (~250 tokens) + answer."""
    history = [system("You are an agent.")]
    for turn in range(4):
        history += [user(f"Request {turn}: never touch tests/")]
        history += exchange(f"s{turn}", "shell", f"shell {turn} " + "s" * 2000, arguments={"command": f"make {turn}"})
        history += exchange(f"r{turn}", "read_file", f"file {turn} " + "f" * 1000, arguments={"path": f"f{turn}.py"})
        history += [assistant(f"Answer {turn}")]
    return history


def assert_pairs_intact(messages: Sequence[ChatMessage]) -> None:
    for index, message in enumerate(messages):
        if message.role is Role.TOOL:
            previous = index - 1
            while messages[previous].role is Role.TOOL:
                previous -= 1
            call_ids = {call.call_id for call in messages[previous].tool_calls}
            assert {result.call_id for result in message.tool_results} <= call_ids
        if message.role is Role.ASSISTANT and message.tool_calls:
            answered = {r.call_id for m in messages[index + 1 : index + 2] for r in m.tool_results}
            assert {call.call_id for call in message.tool_calls} <= answered


def texts(messages: Sequence[ChatMessage], role: Role) -> list[str]:
    return [message.text for message in messages if message.role is role]


async def test_dropping_keeps_users_system_pairs_and_protected_outputs() -> None:
    history = session()
    result = await compactor().compact(history, target=1500, protect_recent=400)
    kept = result.messages
    assert_pairs_intact(kept)
    assert texts(kept, Role.USER) == texts(history, Role.USER)
    assert kept[0] == history[0]
    assert kept[1].text == f"[{result.messages_dropped} earlier messages omitted]"
    assert not result.summary_used and result.messages_summarized == 0
    names = [part.name for message in kept for part in message.tool_results]
    assert names.count("read_file") == 4  # protected outputs survive the truncating path
    assert names.count("shell") < 4


async def test_protected_outputs_go_too_when_nothing_else_is_left() -> None:
    result = await compactor().compact(session(), target=300, protect_recent=100)
    names = [part.name for message in result.messages for part in message.tool_results]
    assert "shell" not in names[:-1] and names.count("read_file") < 4
    assert_pairs_intact(result.messages)


async def test_nothing_is_removed_inside_the_protected_tail_or_when_it_fits() -> None:
    history = session()
    untouched = await compactor().compact(history, target=10_000, protect_recent=400)
    assert untouched.messages == history and untouched.messages_dropped == 0
    everything_protected = await compactor().compact(history, target=100, protect_recent=100_000)
    assert everything_protected.messages == history


class RecordingSummarizer:
    def __init__(self, answer: str = "They ran make and read files.", error: Exception | None = None) -> None:
        self.calls: list[tuple[list[ChatMessage], int]] = []
        self.answer = answer
        self.error = error

    async def __call__(self, messages: Sequence[ChatMessage], target_tokens: int) -> str:
        self.calls.append((list(messages), target_tokens))
        if self.error is not None:
            raise self.error
        return self.answer


async def test_a_summary_replaces_the_pruned_middle() -> None:
    summarizer = RecordingSummarizer()
    history = session()
    result = await compactor(summarizer).compact(history, target=2000, protect_recent=400)
    assert result.summary_used and result.messages_summarized == result.messages_dropped > 0
    assert result.messages[1] == ChatMessage.of_text(
        Role.SYSTEM, "[Previous conversation summary]: They ran make and read files."
    )
    [(summarised, budget)] = summarizer.calls
    assert budget == 2000 // 4
    assert any(message.role is Role.USER for message in summarised)  # the requests explain the replies
    assert texts(result.messages, Role.USER) == texts(history, Role.USER)
    assert_pairs_intact(result.messages)


async def test_a_failing_summarizer_falls_back_to_the_marker() -> None:
    summarizer = RecordingSummarizer(error=RuntimeError("model down"))
    result = await compactor(summarizer).compact(session(), target=1500, protect_recent=400)
    assert not result.summary_used and result.summary_error == "RuntimeError: model down"
    assert result.messages[1].text == f"[{result.messages_dropped} earlier messages omitted]"
    assert [p.name for m in result.messages for p in m.tool_results].count("read_file") == 4
    empty = await compactor(RecordingSummarizer(answer="  ")).compact(session(), target=1500, protect_recent=400)
    assert not empty.summary_used and "empty summary" in (empty.summary_error or "")


async def test_a_failed_summary_is_not_retried_for_the_same_messages() -> None:
    summarizer = RecordingSummarizer(error=RuntimeError("model down"))
    shared = compactor(summarizer)
    history = session()
    first = await shared.compact(history, target=1500, protect_recent=400)
    second = await shared.compact(history, target=1500, protect_recent=400)
    assert len(summarizer.calls) == 1
    assert second.messages == first.messages and second.summary_error == "RuntimeError: model down"
    summarizer.error = None
    grown = [*history, user("Request 4"), *exchange("s4", "shell", "s" * 2000), assistant("Answer 4")]
    assert (await shared.compact(grown, target=1500, protect_recent=400)).summary_used
    assert len(summarizer.calls) == 2


async def test_summaries_are_reused_and_extended() -> None:
    summarizer = RecordingSummarizer()
    history = session()
    shared = compactor(summarizer)
    await shared.compact(history, target=2000, protect_recent=400)
    await shared.compact(history, target=2000, protect_recent=400)
    assert len(summarizer.calls) == 1
    grown = [*history, user("Request 4"), *exchange("s4", "shell", "s" * 2000), assistant("Answer 4")]
    await shared.compact(grown, target=2000, protect_recent=400)
    assert len(summarizer.calls) == 2
    first = summarizer.calls[1][0][0]
    assert first.role is Role.SYSTEM and first.text.startswith("[Previous conversation summary]: ")


async def test_an_oversized_summary_is_cut_to_its_budget() -> None:
    result = await compactor(RecordingSummarizer(answer="w" * 100_000)).compact(
        session(), target=2000, protect_recent=400
    )
    assert len(result.messages[1].text) <= len("[Previous conversation summary]: ") + 2000


def anchored_session() -> list[ChatMessage]:
    return [
        system("sys"),
        user("Port the lexer to Rust, never touch tests/"),
        *exchange("w1", "write_file", "Wrote src/lexer.rs", arguments={"path": "src/lexer.rs", "content": "x" * 800}),
        *exchange("d1", "delete_file", "Deleted old.py", arguments={"path": "old.py"}),
        *exchange("b1", "shell", "error CS1002: ; expected\n" + "e" * 800, success=False, arguments={"command": "b"}),
        assistant("I decided to use a hand-written scanner instead of regexes."),
        user("Now the parser"),
        *exchange("s2", "shell", "ok " + "o" * 3000, arguments={"command": "cargo build"}),
        assistant("Done."),
    ]


async def test_anchored_compaction_keeps_a_state_block() -> None:
    shared = compactor(use_anchored_compaction=True)
    result = await shared.compact(anchored_session(), target=1000, protect_recent=800)
    block = result.messages[1].text
    assert block.startswith("[CONVERSATION STATE]") and block.endswith("[END STATE]")
    assert "Goal: Now the parser" in block
    assert "Files modified: src/lexer.rs, old.py" in block
    assert "- I decided to use a hand-written scanner instead of regexes." in block
    assert "- shell(command=b): error CS1002: ; expected" in block
    assert "Errors: CS1002" in block
    assert "- write_file(path=src/lexer.rs, content=" in block
    assert result.messages[2].text.endswith("earlier messages omitted]")
    # Merged across compactions: a later compaction of a different history keeps what was learned.
    later = await shared.compact(
        [user("Next"), *exchange("z", "shell", "z" * 4000), assistant("fine"), user("Last")],
        target=300,
        protect_recent=50,
    )
    assert "src/lexer.rs" in later.messages[0].text and "Goal: Last" in later.messages[0].text


def test_the_state_cap_drops_completed_steps_first_and_failed_approaches_last() -> None:
    state = AnchorState(
        goal="g" * 20,
        files_modified=["a.py", "b.py"],
        decisions=["use X"],
        errors=["CS0001"],
        failed_approaches=["shell(make): boom"],
        completed_steps=[f"step {n}" for n in range(50)],
    )
    full = state.render(0)
    assert "step 0" in full and len(full) > 400
    capped = state.render(260)
    assert len(capped) <= 260
    assert "step 0\n" not in capped and "step 49" in capped
    assert all(kept in capped for kept in ("shell(make): boom", "a.py", "use X", "CS0001"))
    tight = state.render(120)
    assert len(tight) <= 120 and "shell(make): boom" in tight
    assert all(dropped not in tight for dropped in ("step", "a.py", "use X", "CS0001"))
    assert len(AnchorState(goal="g" * 300).render(100)) <= 100
    assert extract_state([], goal="x" * 300).goal == "x" * 197 + "..."


@st.composite
def histories(draw: st.DrawFn) -> list[ChatMessage]:
    history = [system("sys")]
    for turn in range(draw(st.integers(1, 6))):
        history.append(user(f"u{turn} " + "q" * draw(st.integers(0, 200))))
        for call in range(draw(st.integers(0, 3))):
            name = draw(st.sampled_from(["shell", "read_file", "grep_files"]))
            history += exchange(f"c{turn}_{call}", name, "r" * draw(st.integers(0, 3000)))
        if draw(st.booleans()):
            history.append(assistant("a" * draw(st.integers(0, 500))))
        if draw(st.booleans()):
            history.append(system(f"note {turn}"))
    return history


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), target=st.integers(50, 4000), protect=st.integers(0, 2000), summary=st.booleans())
async def test_invariants_hold_for_any_history(
    history: list[ChatMessage], target: int, protect: int, summary: bool
) -> None:
    result = await compactor(RecordingSummarizer() if summary else None).compact(
        history, target=target, protect_recent=protect
    )
    assert_pairs_intact(result.messages)
    assert texts(result.messages, Role.USER) == texts(history, Role.USER)
    original_system = texts(history, Role.SYSTEM)
    assert [text for text in texts(result.messages, Role.SYSTEM) if text in original_system] == original_system
    non_system = [message for message in history if message.role is not Role.SYSTEM]
    if non_system:
        assert result.messages[-1] == history[-1] or history[-1].role is Role.SYSTEM
    results_before = {part.call_id for m in history for part in m.tool_results if isinstance(part, ToolResultPart)}
    results_after = {part.call_id for m in result.messages for part in m.tool_results}
    assert results_after <= results_before


@pytest.mark.parametrize("target", [10, 1000])
async def test_a_history_without_removable_units_is_returned_whole(target: int) -> None:
    history = [system("s"), user("a" * 4000), user("b")]
    result = await compactor().compact(history, target=target, protect_recent=0)
    assert result.messages == history and result.messages_dropped == 0
