"""The run template's rehearsal (daemon/srez_daemon/rehearsal.py): one headless episode served in
the template's own process that leaves nothing a forked run could inherit, whether it completes
or fails. Each case runs in a fresh interpreter, as the template does, with a temporary folder of
its own to see what is left in it."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROBE = """
import asyncio, json, logging, os, sys, threading
import srez_daemon.rehearsal as rehearsal
from srez_env.grade import patch
from srez_env.sim import scenario

def fds():
    return sorted(int(fd) for fd in os.listdir("/proc/self/fd") if rehearsal._is_open(int(fd)))

rehearsal.TASK = sys.argv[1]
before = fds()
try:
    rehearsal.rehearse()
    error = None
except rehearsal.RehearsalError as e:
    error = str(e)
try:
    os.waitpid(-1, os.WNOHANG)
    children = True
except ChildProcessError:
    children = False
policy = asyncio.get_event_loop_policy()
print(json.dumps({
    "error": error,
    "threads": threading.active_count(),
    "children": children,
    "new_fds": sorted(set(fds()) - set(before)),
    "worlds": len(scenario._TEMPLATES),
    "patches": len(patch._REFERENCE),
    "watcher": type(getattr(policy, "_watcher", None)).__name__,
    "logging": [len(logging.getLogger().handlers), logging.getLogger().level],
}))
"""


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A temporary folder short enough to hold the rehearsal's agent socket."""
    folder = Path(tempfile.mkdtemp(prefix="srez-t-", dir="/tmp"))  # noqa: S108
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def rehearse_in_fresh_interpreter(scratch: Path, task: str) -> dict[str, Any]:
    env = {**os.environ, "TMPDIR": str(scratch)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, task],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    found["left_in_tmp"] = sorted(p.name for p in scratch.iterdir())
    return found


def test_a_rehearsal_completes_and_leaves_nothing_a_run_could_inherit(scratch: Path) -> None:
    found = rehearse_in_fresh_interpreter(scratch, "sre-001")
    assert found == {
        "error": None,
        "threads": 1,  # a fork copies one thread only
        "children": False,  # the agent was reaped
        "new_fds": [],  # no socket, log or run file stays open
        "worlds": 0,  # every run builds its own task's world at T0, whatever the task
        "patches": 0,
        "watcher": "NoneType",  # the default policy again: no watcher of a closed loop
        "logging": [0, logging.WARNING],  # the daemon's log handlers gone, closed
        "left_in_tmp": [],  # the run folder and the throwaway token are gone
    }


def test_a_rehearsal_sweeps_what_a_killed_template_left_and_nothing_else(scratch: Path) -> None:
    """A template killed mid-rehearsal leaves its folder (the run, the 1 MiB reserve, the token)
    in the temporary folder; the next rehearsal removes this user's stale ones and leaves a fresh
    one (another template rehearsing now) and everything else alone."""
    stale, fresh, other = (
        scratch / n for n in ("srez-rehearsal-old", "srez-rehearsal-new", "srez-run-mine")
    )
    for folder in (stale, fresh, other):
        (folder / "run").mkdir(parents=True)
        (folder / "run" / "reserve").write_bytes(b"\0" * (1 << 20))
    (stale / "srez-token-x").mkdir()
    an_hour_ago = stale.stat().st_mtime - 3600
    for path in (stale, other):
        os.utime(path, (an_hour_ago, an_hour_ago))
    found = rehearse_in_fresh_interpreter(scratch, "sre-001")
    assert found["error"] is None
    assert found["left_in_tmp"] == ["srez-rehearsal-new", "srez-run-mine"]


@pytest.mark.parametrize("task", ["sre-999", "../sre-001"])
def test_a_failed_rehearsal_says_why_and_leaves_nothing(scratch: Path, task: str) -> None:
    found = rehearse_in_fresh_interpreter(scratch, task)
    # with bwrap on PATH, tried in the sandbox first, then without: the last failure is said
    assert found["error"].startswith(f"the rehearsal (heuristic on {task}, sandbox none) failed: ")
    assert found["threads"] == 1
    assert found["children"] is False
    assert found["new_fds"] == []
    assert found["left_in_tmp"] == []


def test_a_temporary_folder_too_deep_for_a_socket_is_not_used(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    found = rehearse_in_fresh_interpreter(deep, "sre-001")  # the socket goes under /tmp
    assert (found["error"], found["left_in_tmp"]) == (None, [])
