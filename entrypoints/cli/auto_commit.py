"""``ironhive run --auto-commit``: commits exactly the files the run's tools wrote, edited or deleted."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable
from pathlib import Path

from ironhive.domain.turn import ToolCallRecord

CHANGING_TOOLS = frozenset({"write_file", "edit_file", "delete_file"})


def default_message(prompt: str) -> str:
    """``ironhive: <prompt>`` with newlines flattened, cut to 50 characters (47 + "...")."""
    flat = prompt.replace("\r", "").replace("\n", " ").strip()
    if len(flat) > 50:
        flat = flat[:47] + "..."
    return f"ironhive: {flat}"


def changed_paths(calls: Iterable[ToolCallRecord], root: Path) -> list[Path]:
    """The files that successful write/edit/delete calls touched, inside ``root``, in call order without repeats."""
    seen: dict[Path, None] = {}
    for call in calls:
        if call.name not in CHANGING_TOOLS or call.success is not True:
            continue
        try:
            arguments = json.loads(call.arguments_text)
        except json.JSONDecodeError:
            continue
        path = arguments.get("path") if isinstance(arguments, dict) else None
        if not isinstance(path, str) or not path:
            continue
        absolute = (root / path).resolve()
        if absolute.is_relative_to(root.resolve()):
            seen.setdefault(absolute, None)
    return list(seen)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False, timeout=60)


def auto_commit(root: Path, paths: list[Path], message: str) -> list[str]:
    """Stage only ``paths`` and commit them; returns the lines to print (never raises for git failures).

    Unlike ``git add -A``, changes the run did not make (even ones already in the work tree) stay out of the commit.
    """
    if not (root / ".git").exists():
        return ["Auto-commit skipped: Not a Git repository"]
    relative = [str(path.relative_to(root.resolve())) for path in paths]
    if relative:
        status = _git(root, "status", "--porcelain", "--", *relative)
        if status.returncode != 0:
            return [f"Auto-commit failed: {status.stderr.strip()}"]
        relative = [line[3:].split(" -> ")[-1] for line in status.stdout.splitlines() if line.strip()]
    if not relative:
        return ["Auto-commit skipped: No changes detected"]
    staged = _git(root, "add", "-A", "--", *relative)
    if staged.returncode != 0:
        return [f"Auto-commit failed: {staged.stderr.strip()}"]
    committed = _git(root, "commit", "-m", message, "--", *relative)
    if committed.returncode != 0:
        return [f"Auto-commit failed: {(committed.stderr or committed.stdout).strip()}"]
    return [f"✓ Changes committed: {message}", f"{len(relative)} file(s) changed"]
