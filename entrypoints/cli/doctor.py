"""The ``doctor`` command: checks the configuration, the providers and their reachability, MCP plugins, the environment.

Only cyclopts is imported at module level; the checks (and pydantic, PyYAML, rich) load when the command runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from cyclopts import App, Parameter

if TYPE_CHECKING:
    from ironhive.adapters.config.schema import IronHiveConfig
    from ironhive.adapters.diagnostics.report import Check, CheckStatus, DoctorReport
    from ironhive.adapters.provider_spec import ProviderSpec

CONNECTIVITY_LIMIT = 3
"""How many configured remote providers are asked for their models (the first ones in selection order)."""

_PLACEHOLDERS = {"apiKey": "<key>", "model": "<model>", "deploymentName": "<deployment>", "endpoint": "<url>"}
_MISSING = {"apiKey": "API key not set", "model": "Model not specified", "deploymentName": "Model not specified"}
_LOCAL_ONLY_HINT = (
    "Optional: for faster and stronger answers configure a remote provider, e.g. `ironhive set openai.apiKey <key>` "
    "and `ironhive set openai.model <model>`. Local inference alone is a supported setup, not a problem."
)
_NO_PROVIDER_HINT = (
    "Configure one, e.g. `ironhive set openai.apiKey <key>` and `ironhive set openai.model <model>` (or "
    'OPENAI_API_KEY and OPENAI_MODEL), or use local inference: pip install "ironhive[local]" (lmsupply.enabled: true).'
)


def register(app: App) -> None:
    """Add the ``doctor`` command to ``app``."""
    app.command(doctor, name="doctor")


def doctor(
    *,
    verbose: Annotated[bool, Parameter(help="Show informational checks, paths, sizes and tool names.")] = False,
    fix: Annotated[
        bool,
        Parameter(help="Fix what can be fixed: create ~/.ironhive and config.yaml, migrate settings.json, chmod 600."),
    ] = False,
    as_json: Annotated[bool, Parameter(name="--json", help="Write the report as JSON.")] = False,
) -> int:
    """Check the configuration, providers, MCP plugins and environment.

    Providers configured are asked for their models (the first 3, 5 seconds each); local inference loads the model
    and generates a few tokens in a child process (up to 60 seconds). Exits 1 when any check is an error, else 0.
    """
    report = build_report(home=Path.home(), project=Path.cwd(), environ=os.environ, verbose=verbose, fix=fix)
    if as_json:
        import json

        sys.stdout.write(json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    elif sys.stdout.isatty():
        from ironhive.adapters.diagnostics.render import render_rich
        from ironhive.cli.render import color_enabled

        render_rich(report, sys.stdout, color=color_enabled(sys.stdout))
    else:
        from ironhive.adapters.diagnostics.render import render_plain

        sys.stdout.write(render_plain(report))
    return 1 if report.failed else 0


def build_report(*, home: Path, project: Path, environ: Mapping[str, str], verbose: bool, fix: bool) -> DoctorReport:
    """Apply the fixes (with ``fix``), then run every check.

    Args:
        home: The user's home directory.
        project: The project (working) directory.
        environ: The process environment.
        verbose: Include informational checks and details.
        fix: Apply the automatic fixes first.

    Returns:
        The report.
    """
    from ironhive.adapters.diagnostics.configuration import apply_configuration_fixes, configuration_checks
    from ironhive.adapters.diagnostics.environment import environment_checks
    from ironhive.adapters.diagnostics.mcp import mcp_checks
    from ironhive.adapters.diagnostics.report import CONFIGURATION, Check, DoctorReport
    from ironhive.adapters.diagnostics.sandbox import sandbox_check
    from ironhive.domain.errors import ConfigurationError

    checks: list[Check] = []
    fixes: list[str] = []
    if fix:
        try:
            fixes = apply_configuration_fixes(home, project)
        except ConfigurationError as error:
            checks.append(Check(category=CONFIGURATION, name="Fix", status="error", message=str(error)))
    findings = configuration_checks(home, project, environ)
    checks.extend(findings.checks)
    checks.extend(provider_checks(findings.config, verbose=verbose))
    checks.extend(connectivity_checks(findings.config, home=home, environ=environ, verbose=verbose))
    checks.extend(mcp_checks(project, home, verbose=verbose))
    checks.extend(environment_checks(project, home, environ, verbose=verbose))
    sandbox = sandbox_check(findings.config.permissions, environ.get("PATH"), verbose=verbose)
    if sandbox is not None:
        checks.append(sandbox)
    if verbose:
        checks.append(_version_check())
    return DoctorReport.of(checks, fixes)


def provider_checks(config: IronHiveConfig, *, verbose: bool) -> list[Check]:
    """One check per remote provider that is (even partly) configured, then which provider a run will use.

    Args:
        config: The merged configuration.
        verbose: Also list the providers that are not configured at all, and local inference when it is off.

    Returns:
        The Providers checks.
    """
    from ironhive.adapters.provider_registry import remote_specs
    from ironhive.providers import is_configured

    specs = remote_specs()
    checks = [check for spec in specs if (check := _provider_check(spec, config)) is not None]
    untouched = [spec.name for spec in specs if _untouched(spec, config)]
    if verbose and untouched:
        checks.append(_provider("Not configured", "pass", ", ".join(untouched)))
    remote = [spec.name for spec in specs if spec.automatic and spec.is_configured(config)]
    local = is_configured("lmsupply", config)
    if remote:
        fallback = "; local inference (lmsupply) is available with --provider local" if local else ""
        message = f"Configured: {', '.join(remote)}; a run uses {remote[0]}{fallback}"
        checks.append(_provider("Selection", "pass", message))
    elif local:
        checks.append(_provider("Selection", "pass", "Using local inference only (lmsupply)", _LOCAL_ONLY_HINT))
    else:
        off = not config.lmsupply.enabled
        why = "local inference is off (lmsupply.enabled: false)" if off else "local inference is not installed"
        checks.append(_provider("Selection", "error", f"No provider configured, and {why}", _NO_PROVIDER_HINT))
    if verbose and not config.lmsupply.enabled:
        checks.append(_provider("lmsupply (local)", "pass", "Turned off (lmsupply.enabled: false)"))
    return checks


def connectivity_checks(
    config: IronHiveConfig, *, home: Path, environ: Mapping[str, str], verbose: bool
) -> list[Check]:
    """Ask the first :data:`CONNECTIVITY_LIMIT` configured remote providers for their models; run the local model.

    Args:
        config: The merged configuration.
        home: The user's home directory.
        environ: The environment (``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``, ``HF_HUB_OFFLINE``).
        verbose: Show the local model file's path, size and load time, and llama.cpp's extra buffer types decision.

    Returns:
        The Connectivity checks.
    """
    from ironhive.adapters.diagnostics import connectivity
    from ironhive.adapters.diagnostics.report import CONNECTIVITY, Check
    from ironhive.adapters.provider_registry import SPECS

    configured = [spec for spec in SPECS if spec.is_configured(config)]
    endpoints = [endpoint for spec in configured if (endpoint := spec.model_endpoint(config, environ)) is not None]
    checks = connectivity.connectivity_checks(endpoints[:CONNECTIVITY_LIMIT])
    if len(endpoints) > CONNECTIVITY_LIMIT:
        skipped = ", ".join(endpoint.provider for endpoint in endpoints[CONNECTIVITY_LIMIT:])
        message = f"Not asked: {skipped} (doctor asks the first {CONNECTIVITY_LIMIT} providers)"
        checks.append(Check(category=CONNECTIVITY, name="Other providers", status="pass", message=message))
    for spec in configured:
        if spec.local_check is not None:
            checks.extend(spec.local_check(config, home, environ, verbose))
    return checks


def _untouched(spec: ProviderSpec, config: IronHiveConfig) -> bool:
    """Whether nothing at all is set for ``spec`` (its switch is off, or none of its required keys is set)."""
    values = spec.settings(config)
    if spec.switch is not None:
        return values.get(spec.switch) is not True
    return not any(values.get(key) for key in spec.required)


def _provider_check(spec: ProviderSpec, config: IronHiveConfig) -> Check | None:
    if _untouched(spec, config):
        return None
    name, section, values = spec.name, spec.section, spec.settings(config)
    if spec.switch is not None:
        endpoint, model = values.get("endpoint"), values.get("model")
        if not model:
            hint = f"Set it: `ironhive set {section}.model <model>`."
            return _provider(name, "warning", f"Model not specified (endpoint {endpoint})", hint)
        return _provider(name, "pass", f"Enabled: model {model} at {endpoint}")
    missing = [key for key in spec.required if not values.get(key)]
    if missing:
        problems = "; ".join(dict.fromkeys(_MISSING.get(key, f"{section}.{key} not set") for key in missing))
        commands = " and ".join(f"`ironhive set {section}.{key} {_PLACEHOLDERS[key]}`" for key in missing)
        return _provider(name, "warning", problems, f"Set {commands}.")
    return _provider(name, "pass", f"Configured: model {spec.default_model(config)}")


def _provider(name: str, status: CheckStatus, message: str, hint: str | None = None) -> Check:
    from ironhive.adapters.diagnostics.report import PROVIDERS, Check

    return Check(category=PROVIDERS, name=name, status=status, message=message, hint=hint)


def _version_check() -> Check:
    import platform

    from ironhive import __version__
    from ironhive.adapters.diagnostics.report import ENVIRONMENT, Check

    message = f"ironhive {__version__} on Python {platform.python_version()} ({sys.executable})"
    return Check(category=ENVIRONMENT, name="Version", status="pass", message=message)
