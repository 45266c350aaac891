"""The optional tools a configuration turns on: skills only when configured, the web tools offered by their specs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ironhive.adapters.config.schema import IronHiveConfig
from ironhive.adapters.scripted.client import ScriptedChatClient
from ironhive.optional_tools import OptionalTools, optional_tools


def build(config: IronHiveConfig, project: Path) -> OptionalTools:
    return optional_tools(
        config, project=project, client=ScriptedChatClient(), provider="scripted", history=list, system_prompt=""
    )


def test_the_defaults_offer_the_web_tools_and_no_skills(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    added = build(IronHiveConfig(), tmp_path)
    assert [tool.spec.name for tool in added.tools] == ["web_search", "explore_site"]
    assert added.instructions == "" and added.middlewares == []
    assert capsys.readouterr().err == ""


def test_an_enabled_skill_without_roots_is_still_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    added = build(IronHiveConfig.model_validate({"skills": {"enabled": ["deploy"]}}), tmp_path)
    assert "load_skill" not in [tool.spec.name for tool in added.tools]
    errors = capsys.readouterr().err
    assert errors.startswith("Skills: Enabled skill 'deploy' was not found")


def test_a_configured_root_offers_its_skills(tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: Deploys the app.\n---\n# Deploy\n")
    added = build(IronHiveConfig.model_validate({"skills": {"roots": ["skills"]}}), tmp_path)
    assert "load_skill" in [tool.spec.name for tool in added.tools]
    assert "deploy" in added.instructions


def test_the_defaults_import_no_skills_code() -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ironhive.adapters.config.schema import IronHiveConfig\n"
        "from ironhive.adapters.scripted.client import ScriptedChatClient\n"
        "from ironhive.optional_tools import optional_tools\n"
        "optional_tools(IronHiveConfig(), project=Path.cwd(), client=ScriptedChatClient(), provider='scripted',\n"
        "               history=list, system_prompt='')\n"
        "print(sorted(name for name in sys.modules if 'skills' in name))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
