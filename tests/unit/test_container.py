"""IronHiveContainer: the CLI's graph with no override, the SDK's with overrides, and each slot reaching the agent."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ironhive.adapters.scripted.client import ScriptedChatClient, ScriptedToolCall, ScriptStep
from ironhive.agent_factory import AgentSettings, agent_container
from ironhive.container import IronHiveContainer
from ironhive.domain.context.budget import TokenBudgetChatClient
from ironhive.domain.context.config import CompactionConfig
from ironhive.domain.context.manager import ContextManager
from ironhive.domain.failover import FailoverChatClient
from ironhive.domain.invocation.gate import NO_APPROVER, ApprovalGateMiddleware
from ironhive.domain.invocation.pipeline import NextStep, ToolInvocation, ToolInvocationPipeline, ToolOutcome
from ironhive.domain.options import ChatBehavior
from ironhive.domain.permissions.modes import Mode
from ironhive.domain.permissions.rules import PermissionAction, PermissionPolicy, PermissionRule
from ironhive.domain.turn import TurnRecord
from ironhive.ports.approval import ApprovalDecision, ApprovalRequest
from ironhive.ports.chat import ChatOptions, JsonValue, ToolSpec
from ironhive.providers import ProviderChoice


class Echo:
    """A tool that returns its ``text`` argument."""

    def __init__(self, name: str = "echo") -> None:
        self.calls = 0
        self._name = name

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self._name,
            description="Echo the text.",
            parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        )

    async def invoke(self, arguments: Mapping[str, JsonValue]) -> str:
        self.calls += 1
        return str(arguments.get("text", ""))


class RecordingApproval:
    """Approves every call and remembers what it was asked."""

    def __init__(self) -> None:
        self.requests: list[ApprovalRequest] = []

    async def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return ApprovalDecision(approved=True)


def echo_then_answer(*, tool: str = "echo", times: int = 1) -> ScriptedChatClient:
    calls = [ScriptStep(tool_calls=(ScriptedToolCall(name=tool, arguments={"text": "hi"}),)) for _ in range(times)]
    return ScriptedChatClient([*calls, ScriptStep(text="done")])


def tool_results(turn: TurnRecord) -> list[str]:
    return [part.result for message in turn.messages for part in message.parts if hasattr(part, "result")]


# -- the CLI's graph ---------------------------------------------------------------------------------------------


def cli_settings(tmp_path: Path, **changes: object) -> AgentSettings:
    client = echo_then_answer(tool="read_file")
    choice = ProviderChoice(name="scripted", model="scripted", build=lambda: client)
    values: dict[str, object] = {"providers": (choice,), "working_directory": tmp_path, "approval": None}
    values.update(changes)
    return AgentSettings(**values)  # type: ignore[arg-type]


def test_the_cli_graph_resolves_with_no_override(tmp_path: Path) -> None:
    container = agent_container(cli_settings(tmp_path))
    loop = container.agent_loop()
    names = {tool.spec.name for tool in loop.tools}
    assert {"read_file", "write_file", "execute_command", "list_directory"} <= names
    client = container.chat_client()
    assert isinstance(client, TokenBudgetChatClient)
    steps = container.slots.pipeline()._middlewares
    assert any(isinstance(step, ApprovalGateMiddleware) for step in steps)
    assert container.modes().mode is Mode.WORKING


def test_the_cli_graph_judges_by_the_project_rules(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("secret notes")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("outside")
    client = ScriptedChatClient(
        [
            ScriptStep(tool_calls=(ScriptedToolCall(name="read_file", arguments={"path": str(outside)}),)),
            ScriptStep(text="ok"),
        ]
    )
    choice = ProviderChoice(name="scripted", model="scripted", build=lambda: client)
    loop = agent_container(cli_settings(tmp_path, providers=(choice,))).agent_loop()
    turn = loop.run_sync("read it")
    loop.close()
    assert tool_results(turn)[0].startswith(NO_APPROVER)


# -- the SDK's graph ---------------------------------------------------------------------------------------------


def test_the_sdk_graph_has_the_cli_safeguards() -> None:
    container = IronHiveContainer().add_ironhive(chat_client=echo_then_answer(), tools=[Echo()])
    steps = container.slots.pipeline()._middlewares
    names = [type(step).__name__ for step in steps]
    assert names == [
        "ArgumentParseFailureMiddleware",
        "RepeatedCallGuardMiddleware",
        "RepeatedErrorGuardMiddleware",
        "ResilientArgumentsMiddleware",
    ]
    assert isinstance(container.chat_client(), TokenBudgetChatClient)


def test_a_repeated_call_is_refused_on_its_fourth_time_through_the_sdk() -> None:
    echo = Echo()
    loop = IronHiveContainer().add_ironhive(chat_client=echo_then_answer(times=4), tools=[echo]).agent_loop()
    turn = loop.run_sync("echo hi four times")
    loop.close()
    results = tool_results(turn)
    assert results[:3] == ["hi", "hi", "hi"]
    assert "already ran 3 times in a row" in results[3]
    assert echo.calls == 3


@pytest.mark.parametrize(
    ("switch", "step"),
    [
        ("refuse_unparsable_arguments", "ArgumentParseFailureMiddleware"),
        ("repeated_call_guard", "RepeatedCallGuardMiddleware"),
        ("repeated_error_guard", "RepeatedErrorGuardMiddleware"),
        ("resilient_arguments", "ResilientArgumentsMiddleware"),
    ],
)
def test_each_safeguard_can_be_switched_off_by_name(switch: str, step: str) -> None:
    container = IronHiveContainer().add_ironhive(chat_client=echo_then_answer(), **{switch: False})  # type: ignore[arg-type]
    names = [type(middleware).__name__ for middleware in container.slots.pipeline()._middlewares]
    assert len(names) == 3
    assert step not in names


def test_without_the_token_budget_the_chain_is_the_client() -> None:
    container = IronHiveContainer().add_ironhive(chat_client=echo_then_answer(), token_budget=False)
    assert isinstance(container.chat_client(), FailoverChatClient)


def test_an_ask_without_an_approval_service_is_a_rejection(tmp_path: Path) -> None:
    echo = Echo()
    loop = (
        IronHiveContainer()
        .add_ironhive(chat_client=echo_then_answer(), tools=[echo], working_directory=tmp_path)
        .agent_loop()
    )
    turn = loop.run_sync("echo")
    loop.close()
    assert tool_results(turn)[0].startswith(NO_APPROVER)
    assert echo.calls == 0


def test_fallbacks_take_over_when_the_first_client_fails() -> None:
    from ironhive.domain.errors import ProviderError
    from ironhive.domain.failover import RetryPolicy

    failing = ScriptedChatClient([ScriptStep(error=ProviderError("down", retryable=False))], repeat_last=True)
    loop = (
        IronHiveContainer()
        .add_ironhive(
            chat_client=failing,
            fallbacks=[ScriptedChatClient([ScriptStep(text="from the fallback")])],
            retry=RetryPolicy(max_retries=0),
        )
        .agent_loop()
    )
    assert loop.run_sync("hello").content == "from the fallback"
    loop.close()


# -- every slot reaches the agent --------------------------------------------------------------------------------


class FixedClock:
    def now(self) -> datetime:
        return datetime(2030, 1, 2, tzinfo=UTC)


class Marker:
    """A pipeline step that records the calls it sees."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, invocation: ToolInvocation, next_step: NextStep) -> ToolOutcome:
        self.seen.append(invocation.call.name)
        return await next_step(invocation)


def sdk(**settings: object) -> IronHiveContainer:
    values: dict[str, object] = {"chat_client": echo_then_answer(), "tools": [Echo()]}
    values.update(settings)
    return IronHiveContainer().add_ironhive(**values)  # type: ignore[arg-type]


def run(container: IronHiveContainer, prompt: str = "go") -> TurnRecord:
    loop = container.agent_loop()
    try:
        return loop.run_sync(prompt)
    finally:
        loop.close()


def test_slot_chat_client() -> None:
    assert run(sdk(chat_client=ScriptedChatClient([ScriptStep(text="overridden")]))).content == "overridden"


def test_slot_clock() -> None:
    container = sdk().override(clock=FixedClock())
    assert container.clock().now().year == 2030
    assert container.agent_loop()._clock is container.clock()


def test_slot_tools() -> None:
    assert [tool.spec.name for tool in sdk(tools=[Echo("other")]).agent_loop().tools] == ["other"]


def test_slot_provided_tools() -> None:
    names = [tool.spec.name for tool in sdk().override(provided_tools=(Echo("mcp__x__y"),)).agent_loop().tools]
    assert names == ["mcp__x__y", "echo"]


def test_slot_system_prompt() -> None:
    client = ScriptedChatClient([ScriptStep(text="ok")])
    run(sdk(chat_client=client, system_prompt="You are terse."))
    assert client.requests[0].messages[0].text == "You are terse."


def test_slot_options() -> None:
    assert sdk(options=ChatOptions(temperature=0.1)).agent_loop().options.temperature == 0.1


def test_slot_behavior() -> None:
    echo = Echo()
    run(
        sdk(
            chat_client=echo_then_answer(times=5), tools=[echo], behavior=ChatBehavior(maximum_iterations_per_request=2)
        )
    )
    assert echo.calls == 2


def test_slot_pipeline() -> None:
    marker = Marker()
    run(sdk(pipeline=ToolInvocationPipeline([marker])))
    assert marker.seen == ["echo"]


def test_slot_context() -> None:
    manager = ContextManager(CompactionConfig(), window=10_000)
    assert sdk(context=manager).agent_loop()._context is manager


def test_slot_approval_service_and_permissions() -> None:
    approval = RecordingApproval()
    rules = PermissionPolicy(tools=(PermissionRule(pattern="echo", action=PermissionAction.ASK),))
    turn = run(sdk(approval=approval, permissions=rules))
    assert [request.tool_name for request in approval.requests] == ["echo"]
    assert tool_results(turn) == ["hi"]


def test_slot_initial_mode() -> None:
    rules = PermissionPolicy(tools=(PermissionRule(pattern="echo", action=PermissionAction.ALLOW),))
    container = sdk(permissions=rules).override(initial_mode=Mode.PLANNING)
    assert "Planning mode" in tool_results(run(container))[0]


def test_slot_working_directory(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    client = ScriptedChatClient(
        [
            ScriptStep(tool_calls=(ScriptedToolCall(name="read_file", arguments={"path": "a.txt"}),)),
            ScriptStep(text="ok"),
        ]
    )
    turn = run(sdk(chat_client=client, working_directory=tmp_path))
    assert "alpha" in tool_results(turn)[0]


def test_slot_session_store_and_execution_log(tmp_path: Path) -> None:
    container = sdk().override(home=tmp_path / "home", working_directory=tmp_path)
    store, log = container.session_store(), container.execution_log()
    assert type(store).__name__ == "DiskCacheSessionStore"
    assert type(log).__name__ == "JsonlExecutionLog"


def test_an_unknown_slot_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no slot named 'approvals'"):
        sdk().override(approvals=None)


def test_closing_closes_the_clients_it_built_only() -> None:
    closed: list[str] = []

    class Closable(ScriptedChatClient):
        def __init__(self, name: str) -> None:
            super().__init__([ScriptStep(text="ok")])
            self.name = name

        async def aclose(self) -> None:
            closed.append(self.name)

    handed = Closable("handed")
    with IronHiveContainer().add_ironhive(chat_client_factory=lambda: Closable("built"), fallbacks=[handed]) as hive:
        hive.chat_client()
    assert closed == ["built"]


def test_closing_after_sync_runs_closes_the_client_on_the_loop_it_ran_on() -> None:
    loops: dict[str, asyncio.AbstractEventLoop] = {}

    def answer(messages: object, options: object) -> ScriptStep:
        loops["ran"] = asyncio.get_running_loop()
        return ScriptStep(text="ok")

    class Closable(ScriptedChatClient):
        async def aclose(self) -> None:
            loops["closed"] = asyncio.get_running_loop()

    with IronHiveContainer().add_ironhive(chat_client_factory=lambda: Closable([answer])) as hive:
        assert hive.agent_loop().run_sync("hi").content == "ok"
    assert loops["closed"] is loops["ran"]
    assert loops["ran"].is_closed()


@pytest.mark.parametrize("endpoint", ["http://localhost:11434", "http://localhost:11434/", "http://localhost:11434/v1"])
def test_ollama_takes_its_address_with_or_without_v1(endpoint: str) -> None:
    def base_url(container: IronHiveContainer) -> object:
        return vars(container.slots.primary_client()).get("_base_url")

    assert base_url(IronHiveContainer().add_ironhive_with_ollama(endpoint=endpoint)) == "http://localhost:11434/v1"
    assert base_url(IronHiveContainer().add_ironhive_with_ollama()) == "http://localhost:11434/v1"
