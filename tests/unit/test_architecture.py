"""The dependency rule, read from the source with ast: domain/ and ports/ import only the stdlib and inner layers."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
ALLOWED_INNER = {"domain": ("ironhive.domain", "ironhive.ports"), "ports": ("ironhive.ports",)}
LAYER_FOLDERS = {
    "entrypoints": "ironhive",
    "domain": "ironhive.domain",
    "ports": "ironhive.ports",
    "adapters": "ironhive.adapters",
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.append((node.lineno, "." * node.level + (node.module or "")))
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED_INNER))
def test_inner_layers_import_only_the_stdlib_and_inner_layers(layer: str) -> None:
    violations = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted((ROOT / layer).rglob("*.py"))
        for line, module in imported_modules(path)
        if module.split(".")[0] not in STDLIB and not module.startswith(ALLOWED_INNER[layer])
    ]
    assert violations == []


def test_no_module_imports_a_layer_folder_by_its_bare_name() -> None:
    bare = {"domain", "ports", "adapters", "entrypoints"}
    violations = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for folder in LAYER_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, module in imported_modules(path)
        if module.split(".")[0] in bare or module.startswith(".")
    ]
    assert violations == []


def test_every_source_package_is_listed_in_pyproject() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    present = {
        ".".join([LAYER_FOLDERS[folder], *init.parent.relative_to(ROOT / folder).parts])
        for folder in LAYER_FOLDERS
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert present - listed == set()


def test_every_module_has_a_one_line_docstring() -> None:
    missing = []
    for folder in LAYER_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
            if not docstring or "\n" in docstring.strip().split("\n\n")[0]:
                missing.append(str(path.relative_to(ROOT)))
    assert missing == []


def test_the_protocol_package_imports_only_the_stdlib_pydantic_and_itself() -> None:
    allowed = ("pydantic", "pydantic_core", "ironhive.protocol")
    violations = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted((ROOT / "entrypoints" / "protocol").rglob("*.py"))
        for line, module in imported_modules(path)
        if module.split(".")[0] not in STDLIB and not module.startswith(allowed)
    ]
    assert violations == []
