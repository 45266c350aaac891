"""The scripted provider's spec: a keyless model that echoes, or plays back a script named by ``-m``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ironhive.adapters.provider_spec import Choice, ClientSurface, ProviderSpec

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.ports.chat import ChatClient


def _choose(config: IronHiveConfig, model: str | None, surface: ClientSurface | None) -> Choice:
    script = Path(model).expanduser() if model else None

    def build() -> ChatClient:
        from ironhive.adapters.scripted.client import ScriptedChatClient, echo_step

        if script is None:
            return ScriptedChatClient([echo_step], repeat_last=True, model="echo")
        from ironhive.adapters.scripted.script_file import load_scripted_client

        return load_scripted_client(script)

    return Choice(model=script.stem if script else "echo", build=build)


SCRIPTED = ProviderSpec(
    name="scripted",
    title="scripted",
    automatic=False,
    listed=False,
    through="—",
    choose=_choose,
    default=lambda config: "echo",
)
