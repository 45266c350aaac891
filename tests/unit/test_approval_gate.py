"""The approval gate: planning mode, allow/deny/ask verdicts, approvals, rejections, remembered always-approve."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from ironhive.domain.invocation.gate import ApprovalGateMiddleware
from ironhive.domain.invocation.pipeline import ToolInvocation, ToolInvocationPipeline
from ironhive.domain.permissions.modes import Mode
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
    approver = RecordingApprover(ApprovalDecision(approved=True, modified_arguments={"path": "safe.md"}))
    await invoke(ApprovalGateMiddleware(FixedJudge(ASK), approver), tool, path="notes.md", content="x")
    assert tool.calls == [{"path": "safe.md", "content": "x"}]


async def test_always_approve_is_remembered_for_that_tool_only() -> None:
    approver = RecordingApprover(ApprovalDecision(approved=True, always_approve=True), ApprovalDecision(approved=False))
    gate = ApprovalGateMiddleware(FixedJudge(ASK), approver)
    shell, write = RecordingTool("execute_command"), RecordingTool("write_file")
    await invoke(gate, shell, command="a")
    second = await invoke(gate, shell, command="b")
    third = await invoke(gate, write, path="x")
    assert second.success and not third.success
    assert [r.tool_name for r in approver.requests] == ["execute_command", "write_file"]


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
