"""The commands defined outside the CLI's module are registered when a command line may need them, and the table
that says where each one is defined matches what each module registers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

TABLE_CHECK = """
import json
from importlib import import_module
from ironhive.cli.app import COMMAND_MODULES, app

found = {}
for module in dict.fromkeys(COMMAND_MODULES.values()):
    before = set(app)
    import_module(module).register(app)
    found.update(dict.fromkeys(set(app) - before, module))
print(json.dumps(found))
"""


def run_python(code: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_table_names_every_command_each_module_registers() -> None:
    from ironhive.cli.app import COMMAND_MODULES

    assert json.loads(run_python(TABLE_CHECK)) == COMMAND_MODULES


REGISTER = """
import json, sys
from ironhive.cli.app import COMMAND_MODULES, app, register_commands

args = json.loads(sys.argv[1])
register_commands(args)
register_commands(args)  # once only: a second call changes nothing
print(json.dumps({
    "commands": sorted(name for name in app if name in COMMAND_MODULES or name == "--install-completion"),
    "imported": sorted(module for module in set(COMMAND_MODULES.values()) if module in sys.modules),
}))
"""


@pytest.mark.parametrize(
    ("args", "commands"),
    [
        (["-p", "hi", "-o", "json"], []),
        (["write a haiku"], []),
        (["run", "--json", "hi"], []),
        (["trust", "--list"], ["trust"]),
        (["config"], ["config", "get", "set", "unset"]),
        (["mcp", "list"], ["mcp"]),
        (["-p", "sessions"], ["sessions"]),  # a token that names a command registers it: harmless, never missing
    ],
)
def test_a_command_line_registers_the_commands_it_names(args: list[str], commands: list[str]) -> None:
    from ironhive.cli.app import COMMAND_MODULES

    done = json.loads(run_python(REGISTER, json.dumps(args)))
    assert done["commands"] == sorted(commands)
    assert done["imported"] == sorted({COMMAND_MODULES[name] for name in commands})


@pytest.mark.parametrize(
    "args", [["--help"], ["-h"], ["trust", "--help"], ["completion", "bash"], ["--install-completion"], None]
)
def test_help_completion_and_no_command_line_register_everything(args: list[str] | None) -> None:
    from ironhive.cli.app import COMMAND_MODULES

    done = json.loads(run_python(REGISTER, json.dumps(args)))
    assert done["commands"] == sorted([*COMMAND_MODULES, "--install-completion"])


def test_every_command_is_a_known_name_even_before_it_is_registered() -> None:
    from ironhive.cli.app import COMMAND_MODULES, command_names

    assert set(COMMAND_MODULES) | {"run", "completion"} == set(command_names())
