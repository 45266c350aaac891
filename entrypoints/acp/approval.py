"""The approval service of an ACP session: an *ask* verdict becomes ``session/request_permission`` to the editor."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

from acp.exceptions import RequestError
from acp.schema import AllowedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate

from ironhive.acp.updates import tool_kind, tool_locations, tool_title
from ironhive.ports.approval import ApprovalDecision, ApprovalRequest

log = logging.getLogger(__name__)

OptionId = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
CANCELLED = "the prompt was cancelled"
DISCONNECTED = "the editor's connection closed before it answered"
DECLINED = "the user declined in the editor"
REMEMBERED_REJECTION = "the user rejected these calls for this session"
UNKNOWN_OPTION = "the editor answered with an option that was not offered"

OPTIONS: tuple[PermissionOption, ...] = (
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Always reject", kind="reject_always"),
)
_ONCE_ONLY = tuple(option for option in OPTIONS if option.kind in ("allow_once", "reject_once"))

AskEditor = Callable[[ToolCallUpdate, list[PermissionOption]], Awaitable[RequestPermissionResponse]]
CallStarted = Callable[[str], Awaitable[None]]


def decision_of(
    response: RequestPermissionResponse, offered: tuple[PermissionOption, ...]
) -> tuple[ApprovalDecision, bool]:
    """The decision an editor's answer stands for, and whether a rejection is to be remembered ("always reject").

    A cancelled outcome (the prompt was cancelled) rejects and stops the turn; an option that was not offered rejects.
    """
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome):
        return ApprovalDecision(approved=False, reason=CANCELLED, stop=True), False
    chosen = next((option for option in offered if option.option_id == outcome.option_id), None)
    if chosen is None:
        return ApprovalDecision(approved=False, reason=UNKNOWN_OPTION), False
    if chosen.kind == "allow_once":
        return ApprovalDecision(approved=True), False
    if chosen.kind == "allow_always":
        return ApprovalDecision(approved=True, always_approve=True), False
    return ApprovalDecision(approved=False, reason=DECLINED), chosen.kind == "reject_always"


class AcpApprovalService:
    """Asks the editor about each call the rules ask about; every way of not getting an answer is a rejection.

    "Always allow" is remembered by the approval gate (the scope the request showed, for the rest of the session);
    "always reject" is remembered here, by the same scope, so the editor is not asked about it again. A call without a
    scope (never "always") is offered only the once options.

    Args:
        ask: Sends ``session/request_permission`` and returns the editor's answer.
        cwd: The session's working directory (the calls' locations are absolute).
        started: Told the id of each call the editor allowed (its ``tool_call_update`` turns ``in_progress``).
    """

    def __init__(self, ask: AskEditor, cwd: Path, started: CallStarted | None = None) -> None:
        self._ask = ask
        self._cwd = cwd
        self._started = started
        self._rejected: set[str] = set()

    @property
    def rejected_scopes(self) -> frozenset[str]:
        """The scopes the user rejected for the rest of the session."""
        return frozenset(self._rejected)

    async def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the editor (or reject at once a call inside a scope it rejected "always")."""
        if request.scope is not None and request.scope in self._rejected:
            return ApprovalDecision(approved=False, reason=REMEMBERED_REJECTION)
        offered = OPTIONS if request.scope is not None else _ONCE_ONLY
        arguments = dict(request.arguments)
        call = ToolCallUpdate(
            tool_call_id=request.call_id,
            title=tool_title(request.tool_name, arguments),
            kind=tool_kind(request.tool_name),
            status="pending",
            locations=tool_locations(request.tool_name, arguments, self._cwd),
            raw_input=arguments,
        )
        try:
            response = await self._ask(call, list(offered))
        except (ConnectionError, OSError, RequestError) as error:
            log.info("approval rejected: %s (%s)", DISCONNECTED, error)
            return ApprovalDecision(approved=False, reason=DISCONNECTED, stop=True)
        decision, remember = decision_of(response, offered)
        if remember and request.scope is not None:
            self._rejected.add(request.scope)
        if decision.approved and self._started is not None:
            try:
                await self._started(request.call_id)
            except (ConnectionError, OSError, RequestError) as error:
                log.info("the editor was not told the call started (%s)", error)
        return decision
