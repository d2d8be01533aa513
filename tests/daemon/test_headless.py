"""Headless runs: ``srez-daemon --task ID --agent NAME --out DIR`` with no client (what CI does
with the run image)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def headless(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    env.update(SREZ_PORT="0", SREZ_RUN_DIR=str(tmp_path / "run"), TMPDIR=str(tmp_path))
    return subprocess.run(
        [sys.executable, "-m", "srez_daemon", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_headless_run_leaves_the_graded_run_folder_in_out(tmp_path: Path) -> None:
    done = headless(
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
    done = headless(
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
    done = headless(tmp_path, *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("srez-daemon: error:")
