"""Registry consistency: every provider spec reaches --help, /model, models, doctor, the schema and the README."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ironhive.adapters.config.environment import ENVIRONMENT_VARIABLES
from ironhive.adapters.config.schema import IronHiveConfig, accepted_keys, section_model
from ironhive.adapters.diagnostics import connectivity
from ironhive.adapters.diagnostics import local_model as local_model_module
from ironhive.adapters.diagnostics.connectivity import ModelEndpoint
from ironhive.adapters.diagnostics.report import Check
from ironhive.adapters.openai.spec import AZURE, AZURE_API_PATH
from ironhive.adapters.provider_registry import ALIASES, NAMES, SPECS, canonical, find, remote_specs
from ironhive.adapters.provider_spec import ProviderSpec
from ironhive.cli.config_commands import SET_HELP
from ironhive.cli.doctor import connectivity_checks, provider_checks
from ironhive.cli.interactive import MODEL_HELP
from ironhive.cli.models_command import listing_request, providers_to_list
from ironhive.providers import PRIORITY, select_provider, split_model
from tests.support.cli import run_ironhive

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_VALUES = {"endpoint": "http://127.0.0.1:9/v1", "apiKey": "sk-test-key", "deploymentName": "deployment"}


def everything_configured() -> IronHiveConfig:
    """A configuration in which every registered provider counts as configured, built from the specs."""
    tree: dict[str, dict[str, Any]] = {}
    for spec in SPECS:
        if spec.section is None:
            continue
        values = tree.setdefault(spec.section, {})
        for key in (*spec.required, *spec.model_keys):
            values[key] = SAMPLE_VALUES.get(key, f"{spec.name}-{key}")
        if spec.switch is not None:
            values[spec.switch] = True
    tree.setdefault("lmsupply", {})["modelPath"] = "/nowhere/local-model.gguf"  # lmsupply's `ready`: a model at hand
    return IronHiveConfig.model_validate(tree)


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z][a-z0-9-]*", text.lower()))


def test_names_and_aliases_are_unique_and_every_alias_resolves() -> None:
    assert len(set(NAMES)) == len(NAMES)
    every = [name for spec in SPECS for name in spec.names]
    assert len(set(every)) == len(every)
    config = everything_configured()
    for alias, name in ALIASES.items():
        assert canonical(f" {alias.upper()} ") == name
        assert find(alias) is find(name)
        assert split_model(f"{alias}/some-model") == (name, "some-model")
        assert select_provider(alias, None, config).name == name


def test_selection_order_is_the_registry_order() -> None:
    assert tuple(spec.name for spec in SPECS if spec.automatic and spec.remote) == PRIORITY
    config = everything_configured()
    assert select_provider(None, None, config).name == SPECS[0].name


@pytest.mark.parametrize("command", [(), ("run",)])
def test_every_provider_and_alias_is_in_the_help(command: tuple[str, ...], tmp_path: Path) -> None:
    shown = run_ironhive(*command, "--help", cwd=tmp_path, home=tmp_path, env={"COLUMNS": "400"})
    assert shown.returncode == 0, shown.stderr
    line = next(line for line in shown.stdout.splitlines() if re.search(r"--provider\s+STR", line))
    missing = [name for spec in SPECS for name in spec.names if name not in words(line)]
    assert missing == []


def test_every_provider_and_alias_is_in_the_model_command() -> None:
    missing = [name for spec in SPECS for name in spec.names if name not in words(MODEL_HELP)]
    assert missing == []


def test_models_lists_every_configured_provider_and_accepts_every_name() -> None:
    config = everything_configured()
    assert providers_to_list(None, config) == [spec.name for spec in SPECS if spec.listed]
    for spec in SPECS:
        for name in spec.names:
            assert providers_to_list(name, config) == [spec.name]
        request = listing_request(spec.name, config, home=Path("/nowhere"))
        assert request.provider == spec.name
        assert request.default_model == spec.default_model(config)
        assert (request.lister is None) == (spec.connect is None and spec.local_lister is None)


def test_doctor_reports_every_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    config = everything_configured()
    asked: list[ModelEndpoint] = []
    local: list[str] = []

    def record(endpoints: list[ModelEndpoint], **_: object) -> list[Check]:
        asked.extend(endpoints)
        return []

    def local_check(section: object, **_: object) -> list[Check]:
        local.append("lmsupply")
        return []

    monkeypatch.setattr(connectivity, "connectivity_checks", record)
    monkeypatch.setattr(local_model_module, "local_model_check", local_check)
    checks = provider_checks(config, verbose=True)
    named = {check.name for check in checks}
    assert {spec.name for spec in remote_specs()} <= named
    selection = next(check for check in checks if check.name == "Selection")
    assert f"Configured: {', '.join(PRIORITY)}; a run uses {PRIORITY[0]}" in selection.message
    assert "lmsupply" in selection.message
    reached = connectivity_checks(config, home=Path("/nowhere"), environ={}, verbose=False)
    not_asked = next(check.message for check in reached if check.name == "Other providers")
    probed = [endpoint.provider for endpoint in asked] + re.findall(r"[a-z]+", not_asked.split(":", 1)[1])
    assert [name for name in probed if name in NAMES] == [spec.name for spec in remote_specs()]
    assert local == [spec.name for spec in SPECS if spec.local_check is not None]
    in_doctor = {spec.name for spec in remote_specs()} | {spec.name for spec in SPECS if spec.local_check}
    # The scripted model is never picked or probed: a run names it with --provider scripted.
    assert set(NAMES) - in_doctor == {spec.name for spec in SPECS if not spec.automatic}


@pytest.mark.parametrize("spec", [spec for spec in SPECS if spec.section], ids=lambda spec: spec.name)
def test_every_section_key_and_variable_is_in_the_config_schema(spec: ProviderSpec) -> None:
    sections = accepted_keys(IronHiveConfig)
    assert spec.section in sections
    model = section_model(sections[spec.section].annotation)
    assert model is not None
    keys = set(accepted_keys(model))
    declared = {*spec.required, *spec.model_keys, *(key for _, key in spec.environment)}
    assert declared <= keys, f"{spec.name}: {declared - keys} not in the {spec.section} schema"
    if spec.switch is not None:
        assert spec.switch in keys
    for variable, key in spec.environment:
        assert ENVIRONMENT_VARIABLES[variable] == (spec.section, key)
    assert spec.section in SET_HELP


def test_the_environment_mapping_is_exactly_the_specs() -> None:
    declared = [variable for spec in SPECS for variable, _ in spec.environment]
    assert sorted(ENVIRONMENT_VARIABLES) == sorted(declared)


def readme_rows() -> dict[str, list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("| provider | `--provider` (aliases) |", 1)[1].split("\n\n", 1)[0]
    rows = [line.strip("|").split(" | ") for line in table.splitlines()[2:]]
    return {re.findall(r"`([^`]+)`", cells[1])[0]: cells for cells in rows}


def test_the_readme_table_lists_every_provider_with_its_aliases() -> None:
    rows = readme_rows()
    assert list(rows) == list(NAMES)
    for spec in SPECS:
        title, names, _, through = (cell.strip() for cell in rows[spec.name])
        assert (title, re.findall(r"`([^`]+)`", names), through) == (spec.title, list(spec.names), spec.through)


def test_the_readme_states_the_selection_order() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("\n", " ")
    titles = [spec.title for spec in SPECS if spec.automatic and spec.remote]
    assert f"in this order: {', '.join(titles)} — and local inference" in text


def test_the_azure_endpoint_is_one_value_for_the_client_the_listing_and_doctor() -> None:
    resource = "https://example.openai.azure.com/"
    config = IronHiveConfig.model_validate({"azureopenai": {**SAMPLE_VALUES, "endpoint": resource}})
    expected = "https://example.openai.azure.com" + AZURE_API_PATH
    assert AZURE.connect is not None
    assert AZURE.connect(config).base_url == expected
    endpoint = AZURE.model_endpoint(config, {})
    assert endpoint is not None
    assert endpoint.url == expected + "models"
    lister: Any = AZURE.model_lister(config, home=Path("/nowhere"), timeout=1.0)
    client: Any = AZURE.choice(config, None).build()
    assert lister._base_url == client._base_url == expected
    azure_row = readme_rows()["azure"]
    assert f"`{AZURE_API_PATH}`" in azure_row[2]
