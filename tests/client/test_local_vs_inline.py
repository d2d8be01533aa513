"""End to end on ``local``: the same agent on the same tasks grades exactly as ``inline``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TASKS = ("sre-007", "sre-014", "sre-025")


def _srez(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"SREZ_STATE": str(state), "PATH": "/usr/bin:/bin", "HOME": str(state)}
    return subprocess.run(
        [sys.executable, "-m", "srez_client.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _grades(results: Path) -> dict[str, bytes]:
    found = {}
    for path in sorted(results.glob("sre-*/none/scripted/*/result.json")):
        found[path.parts[-5]] = path.read_bytes()
    return found


@pytest.mark.parametrize("seeds", [1])
def test_scripted_on_local_grades_byte_identical_to_inline(tmp_path: Path, seeds: int) -> None:
    common = ["--agent", "scripted", "--tasks", ",".join(TASKS), "--seeds", str(seeds)]
    local = _srez(
        tmp_path / "state",
        "eval",
        "--backend",
        "local",
        "--parallel",
        "2",
        "--results",
        str(tmp_path / "local"),
        *common,
    )
    inline = _srez(
        tmp_path / "state",
        "eval",
        "--backend",
        "inline",
        "--results",
        str(tmp_path / "inline"),
        *common,
    )
    assert local.returncode == 0, local.stderr
    assert inline.returncode == 0, inline.stderr
    local_grades, inline_grades = _grades(tmp_path / "local"), _grades(tmp_path / "inline")
    assert sorted(local_grades) == sorted(TASKS)
    assert local_grades == inline_grades
    assert all(json.loads(g)["reward"]["total"] == 1.0 for g in local_grades.values())
