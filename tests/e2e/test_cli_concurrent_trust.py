"""Two real ``ironhive mcp trust`` processes at once, many times over: the shared trust store never loses an entry."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import clean_environment, ironhive_executable

ROUNDS = 6
PLUGIN_FILE = "plugins:\n  echo:\n    transport: stdio\n    command: echo\n    arguments: [round-{round}-{side}]\n"


def plugin_file(root: Path, name: str, text: str) -> Path:
    path = root / name / ".ironhive" / "plugins.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_concurrent_mcp_trust_from_two_processes_keeps_both_entries_every_time(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    environment = clean_environment(home)
    expected: set[str] = set()
    for round_number in range(ROUNDS):
        files = [
            plugin_file(tmp_path, f"project-{round_number}-{side}", PLUGIN_FILE.format(round=round_number, side=side))
            for side in ("a", "b")
        ]
        processes = [
            subprocess.Popen(
                [ironhive_executable(), "mcp", "trust", str(path)],
                cwd=path.parents[1],
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for path in files
        ]
        for process in processes:
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
            assert out.startswith("Trusted ")
        expected.update(str(path.resolve()) for path in files)
        stored = json.loads((home / ".ironhive" / "trust.json").read_text())["files"]
        assert set(stored) == expected, f"round {round_number}: lost {expected - set(stored)}"
    assert (home / ".ironhive" / "trust.json").stat().st_mode & 0o777 == 0o600
