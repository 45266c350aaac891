"""ConsoleApprovalService: the menu names the call and what "always" covers; edit, reject, stop and bad answers."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from ironhive.adapters.console_approval import ConsoleApprovalService, summary
from ironhive.ports.approval import ApprovalDecision, ApprovalRequest, RiskLevel
from ironhive.ports.chat import JsonValue


def request(scope: str | None, arguments: dict[str, JsonValue] | None = None) -> ApprovalRequest:
    return ApprovalRequest(
        tool_name="execute_command",
        arguments=arguments if arguments is not None else {"command": "echo hi"},
        call_id="c1",
        level=RiskLevel.MEDIUM,
        reason="Shell command: echo hi",
        prompt="Allow executing this command?",
        scope=scope,
    )


async def ask(scope: str | None, answers: str) -> tuple[ApprovalDecision, str]:
    stderr = io.StringIO()
    console = ConsoleApprovalService(stdin=io.StringIO(answers), stderr=stderr, is_interactive=lambda: True)
    decision = await console.request_approval(request(scope))
    return decision, stderr.getvalue()


async def test_the_menu_names_the_call_and_the_scope_always_would_cover() -> None:
    decision, shown = await ask("execute_command: echo *", "a\n")
    assert decision == ApprovalDecision(approved=True, always_approve=True)
    assert "[medium] Shell command: echo hi\n" in shown
    assert "  [a]lways approves execute_command: echo * for this session\n" in shown
    assert "Allow execute_command `echo hi`? [y]es / [a]lways / [n]o / [e]dit / [s]top: " in shown


async def test_without_a_scope_always_is_not_offered_nor_taken() -> None:
    decision, shown = await ask(None, "a\ny\n")
    assert decision == ApprovalDecision(approved=True)  # "a" was refused, "y" approved once
    assert "[a]" not in shown
    assert "Answer y, n, e or s." in shown


async def test_reject_stop_and_end_of_input_never_approve() -> None:
    assert (await ask(None, "n\n"))[0] == ApprovalDecision(approved=False, reason="User rejected")
    assert (await ask(None, "stop\n"))[0] == ApprovalDecision(
        approved=False, reason="User rejected and stopped", stop=True
    )
    assert (await ask(None, ""))[0] == ApprovalDecision(approved=False, reason="User rejected")


async def test_edit_approves_with_the_typed_arguments() -> None:
    decision, shown = await ask(None, 'e\n{"command": "echo bye"}\n')
    assert decision == ApprovalDecision(approved=True, modified_arguments={"command": "echo bye"})
    assert '  now: {"command": "echo hi"}\n' in shown  # the arguments to start from


async def test_a_broken_or_empty_edit_goes_back_to_the_menu() -> None:
    decision, shown = await ask(None, 'e\n["not", "an object"]\ne\n{"command": \ne\n\nn\n')
    assert decision == ApprovalDecision(approved=False, reason="User rejected")
    assert "Not changed: the arguments must be a JSON object ({...})." in shown
    assert shown.count("Not changed:") == 2  # the array and the broken JSON; the empty answer just goes back


async def test_no_terminal_rejects_without_asking() -> None:
    stderr = io.StringIO()
    console = ConsoleApprovalService(stdin=io.StringIO("y\n"), stderr=stderr, is_interactive=lambda: False)
    decision = await console.request_approval(request(None))
    assert not decision.approved and "no interactive console" in (decision.reason or "")
    assert stderr.getvalue() == ""


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@given(st.dictionaries(st.text(max_size=10), json_values, max_size=5))
def test_the_summary_is_one_short_line_taken_from_a_text_argument(arguments: dict[str, JsonValue]) -> None:
    text = summary(arguments, limit=60)
    assert len(text.splitlines()) <= 1 and len(text) <= 60
    texts = [value for value in arguments.values() if isinstance(value, str) and value.strip()]
    assert (text == "") == (not texts)
    first_part = text.removesuffix("…").split(" ⏎")[0].strip()
    assert not texts or any(first_part in value for value in texts)


def test_the_summary_prefers_the_command_or_path() -> None:
    assert summary({"content": "long text", "path": "src/app.py"}) == "src/app.py"
    assert summary({"timeout": 5, "command": "ls -la\nrm x"}) == "ls -la ⏎ rm x"
    assert summary({"count": 3}) == ""
