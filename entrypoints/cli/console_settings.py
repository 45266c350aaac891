"""The agent settings of a console run (one prompt or interactive): configuration, command line, console approvals."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.agent_factory import AgentSettings
    from ironhive.domain.permissions.modes import Mode
    from ironhive.ports.approval import ApprovalService


def console_settings(
    config: IronHiveConfig,
    *,
    provider: str | None,
    model: str | None,
    project: Path,
    initial_mode: Mode,
    approval: ApprovalService | None = None,
) -> AgentSettings:
    """Settings for an agent working in ``project`` that asks its approvals on the console (``approval``, by default
    a :class:`ConsoleApprovalService` on stdin and stderr).

    Raises:
        ConfigurationError: No provider fits, or a section is invalid.
    """
    from ironhive.adapters.console_approval import ConsoleApprovalService
    from ironhive.agent_factory import AgentSettings

    return AgentSettings.from_config(
        config,
        provider=provider,
        model=model,
        working_directory=project,
        approval=approval if approval is not None else ConsoleApprovalService(),
        initial_mode=initial_mode,
    )
