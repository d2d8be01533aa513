"""Headless runs: ``srez-daemon --task ID --agent NAME --out DIR`` with no client (what CI does
with the run image)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemonkit import run_headless


def test_headless_run_leaves_the_graded_run_folder_in_out(tmp_path: Path) -> None:
    done = run_headless(
        tmp_path, "--task", "sre-025", "--agent", "scripted", "--out", str(tmp_path / "out")
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "out"
    assert json.loads((out / "result.json").read_text())["reward"]["total"] == 1.0
    assert json.loads((out / "summary.json").read_text())["status"] == "ok"
    assert json.loads((out / "run.json").read_text())["backend"] == "headless"
    assert (out / "archive" / "dialog.jsonl").stat().st_size > 0
    assert not (out / "agent.sock").exists()  # sockets and links are not copied


def test_headless_exit_code_is_zero_whatever_the_score(tmp_path: Path) -> None:
    done = run_headless(
        tmp_path, "--task", "sre-025", "--agent", "random", "--out", str(tmp_path / "out")
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "out" / "result.json").read_text())["passed"] is False


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--task", "sre-999", "--agent", "scripted"), "names no packaged task"),
        (("--task", "sre-007", "--agent", "bogus"), "unknown agent"),
    ],
)
def test_headless_bad_input_is_one_line_exit_2(
    tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    done = run_headless(tmp_path, *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("srez-daemon: error:")
