"""The approval gate: planning mode, allow/deny/ask verdicts, approvals, rejections, changed arguments judged again,
always-approve remembered for the scope the request showed."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from ironhive.domain.invocation.gate import MAX_ASKS, ApprovalGateMiddleware
from ironhive.domain.invocation.pipeline import ToolInvocation, ToolInvocationPipeline
from ironhive.domain.permissions.commands import judge_command
from ironhive.domain.permissions.modes import Mode
from ironhive.domain.permissions.rules import DEFAULT_POLICY
from ironhive.domain.permissions.verdict import Verdict
from ironhive.domain.tool_calls import make_tool_call
from ironhive.ports.approval import ApprovalDecision, ApprovalRequest, RiskLevel
from ironhive.ports.chat import JsonValue
from tests.support.fakes import RecordingTool


class FixedJudge:
    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict

    def evaluate(self, tool_name: str, arguments: Mapping[str, JsonValue]) -> Verdict:
        return self.verdict


class RecordingApprover:
    def __init__(self, *decisions: ApprovalDecision) -> None:
        self.decisions = list(decisions)
        self.requests: list[ApprovalRequest] = []

    async def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return self.decisions.pop(0)


class ShellRules:
    """Judges shell calls by the built-in bash rules (``rm -rf *`` denied, an unknown program asked)."""

    def evaluate(self, tool_name: str, arguments: Mapping[str, JsonValue]) -> Verdict:
        command = arguments.get("command")
        return judge_command(DEFAULT_POLICY, command if isinstance(command, str) else "")


ASK = Verdict.ask(RiskLevel.CRITICAL, "Shell command: rm -rf build", "Allow executing this command?")


async def invoke(gate: ApprovalGateMiddleware, tool: RecordingTool, **arguments: JsonValue):  # type: ignore[no-untyped-def]
    call = make_tool_call("call_7", tool.spec.name, None)
    invocation = ToolInvocation(call=call, tool=tool, arguments=arguments)
    return await ToolInvocationPipeline([gate]).invoke(invocation)


async def test_allow_runs_the_tool() -> None:
    tool = RecordingTool("read_file")
    outcome = await invoke(ApprovalGateMiddleware(FixedJudge(Verdict.allow()), None), tool, path="a")
    assert outcome.success and tool.calls == [{"path": "a"}]


async def test_deny_refuses_with_the_reason_and_does_not_run() -> None:
    tool = RecordingTool("read_file")
    judge = FixedJudge(Verdict.deny(RiskLevel.CRITICAL, "Protected directory"))
    outcome = await invoke(ApprovalGateMiddleware(judge, None), tool, path="secrets/x")
    assert (outcome.result, outcome.success, tool.calls) == ("Permission denied: Protected directory", False, [])


async def test_ask_without_an_approval_service_is_refused() -> None:
    tool = RecordingTool("execute_command")
    outcome = await invoke(ApprovalGateMiddleware(FixedJudge(ASK), None), tool, command="rm -rf build")
    assert outcome.result == "Approval required but no approval service is configured: Shell command: rm -rf build"
    assert tool.calls == []


async def test_ask_passes_the_request_to_the_approver() -> None:
    tool = RecordingTool("execute_command")
    approver = RecordingApprover(ApprovalDecision(approved=True))
    outcome = await invoke(ApprovalGateMiddleware(FixedJudge(ASK), approver), tool, command="rm -rf build")
    assert outcome.success
    [request] = approver.requests
    assert request == ApprovalRequest(
        tool_name="execute_command",
        arguments={"command": "rm -rf build"},
        call_id="call_7",
        level=RiskLevel.CRITICAL,
        reason="Shell command: rm -rf build",
        prompt="Allow executing this command?",
        scope="execute_command: rm *",
    )


@pytest.mark.parametrize(
    ("decision", "result", "terminate"),
    [
        (ApprovalDecision(approved=False, reason="not on prod"), "Approval rejected: not on prod", False),
        (ApprovalDecision(approved=False), "Approval rejected: the operator declined", False),
        (
            ApprovalDecision(approved=False, reason="User rejected and stopped", stop=True),
            "Approval rejected: User rejected and stopped",
            True,
        ),
    ],
)
async def test_rejection_is_a_failed_result(decision: ApprovalDecision, result: str, terminate: bool) -> None:
    tool = RecordingTool("execute_command")
    outcome = await invoke(ApprovalGateMiddleware(FixedJudge(ASK), RecordingApprover(decision)), tool, command="x")
    assert (outcome.result, outcome.success, outcome.terminate, tool.calls) == (result, False, terminate, [])


async def test_modified_arguments_replace_the_named_keys_only() -> None:
    tool = RecordingTool("write_file")
    approver = RecordingApprover(
        ApprovalDecision(approved=True, modified_arguments={"path": "safe.md"}), ApprovalDecision(approved=True)
    )
    await invoke(ApprovalGateMiddleware(FixedJudge(ASK), approver), tool, path="notes.md", content="x")
    assert tool.calls == [{"path": "safe.md", "content": "x"}]
    assert approver.requests[1].arguments == {"path": "safe.md", "content": "x"}  # the changed call, asked again


async def test_always_approve_is_remembered_for_the_scope_the_request_showed() -> None:
    approver = RecordingApprover(
        ApprovalDecision(approved=True, always_approve=True),
        *[ApprovalDecision(approved=False)] * 5,
    )
    gate = ApprovalGateMiddleware(FixedJudge(ASK), approver)
    shell, write = RecordingTool("execute_command"), RecordingTool("write_file")
    await invoke(gate, shell, command="echo hi")
    covered = await invoke(gate, shell, command="echo 'bye now'")
    outside = [
        await invoke(gate, shell, command="curl -s http://127.0.0.1:9/x|sh"),
        await invoke(gate, shell, command="echo hi; touch pwned"),
        await invoke(gate, shell, command="echo hi > notes.md"),
        await invoke(gate, shell, command="echo $(id)"),
        await invoke(gate, write, path="x"),
    ]
    assert covered.success and all(not outcome.success for outcome in outside)
    assert [r.scope for r in approver.requests] == [
        "execute_command: echo *",
        "execute_command: curl * ; sh",
        "execute_command: echo * ; touch *",
        "execute_command: echo hi > notes.md",
        "execute_command: id * ; echo $(id)",
        "write_file: x",
    ]
    assert shell.calls == [{"command": "echo hi"}, {"command": "echo 'bye now'"}]


async def test_a_call_without_a_scope_is_asked_every_time_even_after_always() -> None:
    approver = RecordingApprover(*[ApprovalDecision(approved=True, always_approve=True)] * 2)
    gate = ApprovalGateMiddleware(FixedJudge(ASK), approver)
    shell = RecordingTool("execute_command")
    await invoke(gate, shell, command="echo 'unbalanced")
    await invoke(gate, shell, command="echo 'unbalanced")
    assert [r.scope for r in approver.requests] == [None, None]
    assert gate.remembered.scopes == ()


async def test_changed_arguments_that_the_rules_deny_are_denied() -> None:
    approver = RecordingApprover(
        ApprovalDecision(approved=True, modified_arguments={"command": "rm -rf build; touch pwned"})
    )
    shell = RecordingTool("execute_command")
    outcome = await invoke(ApprovalGateMiddleware(ShellRules(), approver), shell, command="echo hi")
    assert (outcome.result, outcome.success, shell.calls) == ("Permission denied: Destructive command", False, [])
    assert len(approver.requests) == 1


async def test_changed_arguments_that_the_rules_allow_run_without_another_question() -> None:
    approver = RecordingApprover(ApprovalDecision(approved=True, modified_arguments={"command": "git status"}))
    shell = RecordingTool("execute_command")
    outcome = await invoke(ApprovalGateMiddleware(ShellRules(), approver), shell, command="echo hi")
    assert outcome.success and shell.calls == [{"command": "git status"}]
    assert len(approver.requests) == 1


async def test_changed_arguments_that_still_need_approval_are_asked_again_once() -> None:
    approver = RecordingApprover(
        ApprovalDecision(approved=True, modified_arguments={"command": "touch made"}), ApprovalDecision(approved=True)
    )
    shell = RecordingTool("execute_command")
    outcome = await invoke(ApprovalGateMiddleware(ShellRules(), approver), shell, command="echo hi")
    assert outcome.success and shell.calls == [{"command": "touch made"}]
    assert [(r.arguments, r.scope) for r in approver.requests] == [
        ({"command": "echo hi"}, "execute_command: echo *"),
        ({"command": "touch made"}, "execute_command: touch *"),
    ]


async def test_a_second_question_can_be_rejected() -> None:
    approver = RecordingApprover(
        ApprovalDecision(approved=True, modified_arguments={"command": "touch made"}),
        ApprovalDecision(approved=False, reason="not that either"),
    )
    shell = RecordingTool("execute_command")
    outcome = await invoke(ApprovalGateMiddleware(ShellRules(), approver), shell, command="echo hi")
    assert (outcome.result, shell.calls) == ("Approval rejected: not that either", [])


async def test_changing_the_arguments_again_and_again_is_bounded() -> None:
    approver = RecordingApprover(
        *[ApprovalDecision(approved=True, modified_arguments={"command": f"touch f{n}"}) for n in range(10)]
    )
    shell = RecordingTool("execute_command")
    outcome = await invoke(ApprovalGateMiddleware(ShellRules(), approver), shell, command="echo hi")
    assert outcome.result == (
        f"Approval rejected: the arguments were changed {MAX_ASKS} times and the changed call still needs approval"
    )
    assert not outcome.success and shell.calls == []
    assert len(approver.requests) == MAX_ASKS == 3


async def test_the_same_arguments_sent_back_count_as_approval_as_shown() -> None:
    approver = RecordingApprover(ApprovalDecision(approved=True, modified_arguments={"command": "echo hi"}))
    shell = RecordingTool("execute_command")
    outcome = await invoke(ApprovalGateMiddleware(ShellRules(), approver), shell, command="echo hi")
    assert outcome.success and len(approver.requests) == 1


async def test_always_with_changed_arguments_remembers_the_shown_scope_and_judges_the_change() -> None:
    approver = RecordingApprover(
        ApprovalDecision(approved=True, always_approve=True, modified_arguments={"command": "echo changed"}),
        ApprovalDecision(approved=False),
    )
    gate = ApprovalGateMiddleware(ShellRules(), approver)
    shell = RecordingTool("execute_command")
    assert (await invoke(gate, shell, command="echo hi")).success  # the change is inside the remembered scope
    assert not (await invoke(gate, shell, command="touch x")).success
    assert shell.calls == [{"command": "echo changed"}]
    assert len(approver.requests) == 2


async def test_always_approve_never_overrides_a_deny() -> None:
    judge = FixedJudge(ASK)
    gate = ApprovalGateMiddleware(judge, RecordingApprover(ApprovalDecision(approved=True, always_approve=True)))
    tool = RecordingTool("execute_command")
    await invoke(gate, tool, command="a")
    judge.verdict = Verdict.deny(RiskLevel.CRITICAL, "Destructive command")
    outcome = await invoke(gate, tool, command="rm -rf /tmp/x")
    assert outcome.result == "Permission denied: Destructive command"


@pytest.mark.parametrize(("name", "runs"), [("read_file", True), ("list_directory", True), ("write_file", False)])
async def test_planning_mode_permits_read_only_tools_only(name: str, runs: bool) -> None:
    tool = RecordingTool(name)
    gate = ApprovalGateMiddleware(FixedJudge(Verdict.allow()), None, mode=lambda: Mode.PLANNING)
    outcome = await invoke(gate, tool, path="a")
    assert outcome.success is runs
    if not runs:
        assert outcome.result == f"Planning mode permits read-only tools only: {name}"


async def test_planning_mode_honours_extra_read_only_tools() -> None:
    gate = ApprovalGateMiddleware(
        FixedJudge(Verdict.allow()), None, mode=lambda: Mode.PLANNING, read_only_tools=("advisor",)
    )
    assert (await invoke(gate, RecordingTool("advisor"))).success
