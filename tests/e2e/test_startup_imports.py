"""Start-up imports only what a run uses: ``--help``/``--version`` no provider SDK, a prompt on an OpenAI-compatible
provider nothing but the openai SDK (MCP only with a plugin file), the SDK no provider SDK before a turn needs one."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType

import pytest

from ironhive.lean_imports import _HideBridges
from tests.support.cli import clean_environment
from tests.support.openai_server import LoopbackOpenAIServer

PROVIDER_SDKS = ("openai", "anthropic", "google.genai", "llama_cpp", "mcp")


def modules_imported_by(*args: str) -> set[str]:
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ironhive", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
        check=True,
    )
    modules = set()
    for line in completed.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                modules.add(name)
    assert "ironhive" in modules  # the import trace really was read
    return modules


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_no_provider_sdk_is_imported(flag: str) -> None:
    modules = modules_imported_by(flag)
    loaded = sorted(m for m in modules for sdk in PROVIDER_SDKS if m == sdk or m.startswith(sdk + "."))
    assert loaded == []


def test_version_imports_no_cli_framework_either() -> None:
    modules = modules_imported_by("--version")
    assert not {"cyclopts", "rich", "pydantic", "dependency_injector"} & modules


UNNEEDED_BY_AN_OPENAI_RUN = (
    *("mcp", "mcp_types", "anthropic", "google.genai", "llama_cpp", "aiohttp", "fastapi"),
    "prompt_toolkit",  # the interactive mode's line editor
    # What a tool needs only when it runs: the web tools' backends and parsers, the path-rule matcher's patterns, the
    # shell-command judge and parser, and Agent Skills when no root is configured.
    *("ironhive.adapters.web.search_tool", "ironhive.adapters.web.explore", "ironhive.adapters.web.research"),
    *("ironhive.adapters.web.http", "html.parser", "xml.etree", "pathspec", "ironhive.adapters.skills"),
    *("ironhive.domain.permissions.commands", "ironhive.domain.permissions.shell"),
)
"""What a prompt on an OpenAI-compatible provider, without plugins, has no use for."""

EXIT_HOOK = """\
import atexit, runpy, sys
target = sys.argv.pop(1)
atexit.register(lambda: open(target, "w", encoding="utf-8").write("\\n".join(sorted(sys.modules))))
runpy.run_module("ironhive", run_name="__main__", alter_sys=True)
"""
"""``python -m ironhive`` that writes the modules imported when it exits into the file named first."""

SDK_SCRIPT = """\
import sys
from pathlib import Path
from ironhive import IronHiveContainer

target, endpoint = Path(sys.argv[1]), sys.argv[2]
imported = Path(str(target) + ".imported")
imported.write_text("\\n".join(sorted(sys.modules)), encoding="utf-8")
hive = IronHiveContainer().add_ironhive_with_openai("sk-loopback-test", "gpt-test", endpoint=endpoint)
Path(str(target) + ".registered").write_text("\\n".join(sorted(sys.modules)), encoding="utf-8")
with hive:
    print(hive.agent_loop().run_sync("hi").content)
target.write_text("\\n".join(sorted(sys.modules)), encoding="utf-8")
"""
"""An SDK script writing its modules after the import, after registering OpenAI and after one turn."""


def within(modules: Iterable[str], packages: Iterable[str]) -> set[str]:
    """The ``packages`` of which ``modules`` hold the package itself or one of its modules."""
    names = set(modules)
    return {package for package in packages for name in names if name == package or name.startswith(package + ".")}


def modules_at_exit(*args: str, cwd: Path, home: Path, env: Mapping[str, str]) -> set[str]:
    """Run ``ironhive *args`` (this interpreter, a clean environment) and return ``sys.modules`` as it exits."""
    target = home / "modules.txt"
    completed = subprocess.run(
        [sys.executable, "-c", EXIT_HOOK, str(target), *args],
        cwd=cwd,
        env=clean_environment(home, {"IRONHIVE_DAEMON": "0", **env}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    modules = set(target.read_text(encoding="utf-8").splitlines())
    assert "ironhive.cli.app" in modules  # the CLI really ran in that process
    return modules


def openai_sdk_imports() -> set[str]:
    """The modules ``import openai`` imports by itself (aiohttp among them when it is installed)."""
    completed = subprocess.run(
        [sys.executable, "-c", "import sys, openai; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(completed.stdout.splitlines())


def openai_env(server: LoopbackOpenAIServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-loopback-test", "OPENAI_MODEL": "gpt-test", "OPENAI_ENDPOINT": server.base_url}


def test_a_prompt_on_an_openai_compatible_provider_imports_only_what_it_uses(tmp_path: Path) -> None:
    with LoopbackOpenAIServer() as server:
        server.enqueue_text("Hello.", usage=(5, 1))
        modules = modules_at_exit("-p", "hi", "-o", "json", cwd=tmp_path, home=tmp_path, env=openai_env(server))
        assert len(server.requests) == 1
    assert "openai" in modules
    # Not even what the openai SDK imports by itself for a client ironhive never builds (aiohttp when installed).
    assert within(modules, UNNEEDED_BY_AN_OPENAI_RUN) == set()
    assert within(modules, ("mcp", "mcp_types", "anthropic", "google.genai", "llama_cpp", "fastapi")) == set()
    assert {
        "ironhive.adapters.mcp.provider",
        "ironhive.adapters.mcp.plugin_config",
        "ironhive.adapters.mcp.trust",
    }.isdisjoint(modules)


def test_a_bridge_is_hidden_only_while_its_package_is_not_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    finder = _HideBridges()
    monkeypatch.delitem(sys.modules, "aiohttp", raising=False)
    for name in ("openai._vendor.httpx_aiohttp", "openai._vendor.httpx_aiohttp.transport"):
        with pytest.raises(ModuleNotFoundError):
            finder.find_spec(name)
    for other in ("openai._vendor", "openai._vendor.httpx_aiohttp_other", "aiohttp", "openai"):
        assert finder.find_spec(other) is None  # left to the next finder
    monkeypatch.setitem(sys.modules, "aiohttp", ModuleType("aiohttp"))
    assert finder.find_spec("openai._vendor.httpx_aiohttp") is None  # imported anyway: the bridge costs nothing


def test_a_prompt_on_the_scripted_provider_imports_no_sdk_and_no_http_stack(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('{"steps": [{"text": "done"}]}')
    args = ("--provider", "scripted", "-m", str(script), "-p", "hi", "-o", "json")
    modules = modules_at_exit(*args, cwd=tmp_path, home=tmp_path, env={})
    assert "ironhive.adapters.web.tools" in modules  # the web tools are built, their HTTP stack waits for a call
    assert within(modules, (*UNNEEDED_BY_AN_OPENAI_RUN, "openai", "httpx2", "starlette")) == set()


def test_a_plugin_file_brings_in_the_mcp_sdk_and_its_tools(tmp_path: Path) -> None:
    pytest.importorskip("mcp_server_time")
    home = tmp_path / "home"
    (home / ".ironhive").mkdir(parents=True)
    (home / ".ironhive" / "plugins.yaml").write_text(  # the user's own file: trusted without asking
        "plugins:\n  time:\n    transport: stdio\n"
        f"    command: {sys.executable}\n    arguments: [-m, mcp_server_time, --local-timezone, UTC]\n"
    )
    with LoopbackOpenAIServer() as server:
        server.enqueue_text("Hello.", usage=(5, 1))
        modules = modules_at_exit("-p", "hi", "-o", "json", cwd=tmp_path, home=home, env=openai_env(server))
        (request,) = server.requests
    assert {"mcp", "ironhive.adapters.mcp.provider", "ironhive.adapters.mcp.mapping"} <= modules
    assert "mcp__time__get_current_time" in {tool["function"]["name"] for tool in request["tools"]}
    assert within(modules, ("anthropic", "google.genai", "llama_cpp")) == set()


def test_the_sdk_imports_no_provider_sdk_until_a_turn_needs_one(tmp_path: Path) -> None:
    target = tmp_path / "modules.txt"
    with LoopbackOpenAIServer() as server:
        server.enqueue_text("Hello.", usage=(5, 1))
        completed = subprocess.run(
            [sys.executable, "-c", SDK_SCRIPT, str(target), server.base_url],
            cwd=tmp_path,
            env=clean_environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "Hello."
    sdks = (*PROVIDER_SDKS, "mcp_types", "aiohttp")  # fastapi may come: dependency-injector's wiring, kept for apps
    for stage in ("imported", "registered"):
        modules = set(Path(f"{target}.{stage}").read_text(encoding="utf-8").splitlines())
        assert within(modules, sdks) == set(), stage
    after_a_turn = set(target.read_text(encoding="utf-8").splitlines())
    assert "openai" in after_a_turn
    assert within(after_a_turn - openai_sdk_imports(), [sdk for sdk in sdks if sdk != "openai"]) == set()
