"""``srez run``, ``srez runs ...``, ``srez attach`` and ``srez eval --backend local``, through the
installed console script with a private ``SREZ_STATE``."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from client_helpers import one_line_error

from srez_client.daemon_client.follow import render_entry
from srez_daemon.protocol import Assistant, ToolCall, ToolResult

SREZ = Path(sys.executable).parent / "srez"


def run_args(task: str, agent: str) -> tuple[str, ...]:
    """``run --task TASK --agent AGENT``."""
    return ("run", "--task", task, "--agent", agent)


RUN_SCRIPTED = run_args("sre-001", "scripted")
"""``srez run`` of the scripted agent on the first task (a fast run that passes)."""


def srez(state: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SREZ_STATE": str(state)}
    return subprocess.run(
        [str(SREZ), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
        timeout=120,
    )


def test_run_mirrors_prints_the_grade_and_cleans_its_state(tmp_path: Path) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    proc = srez(state, *RUN_SCRIPTED, "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    assert "grade:    reward 1.000, resolved yes, passed yes" in proc.stdout
    (folder,) = (results / "sre-001" / "none" / "scripted").iterdir()
    for name in ("run.json", "result.json", "summary.json", "mirror.json", "logs/container.log"):
        assert (folder / name).is_file(), name
    assert f"results:  {folder}" in proc.stdout
    assert "launched" not in proc.stdout and "srez: run" in proc.stderr
    assert srez(state, "runs", "list", "--all").stdout.strip() == "no runs"
    listing = srez(state, "runs", "results", "--results", str(results))
    assert folder.name in listing.stdout and "1.000" in listing.stdout


def test_a_kept_run_can_be_inspected_then_stopped_and_removed(tmp_path: Path) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    proc = srez(state, *run_args("sre-002", "heuristic"), "--keep", "--results", str(results))
    assert proc.returncode in (0, 1), proc.stderr
    assert "still serving" in proc.stdout
    running = srez(state, "runs", "list").stdout
    run_id = running.splitlines()[2].split()[0]
    assert "running" in running and "sre-002" in running
    url = srez(state, "runs", "url", run_id[:20]).stdout.strip()
    assert url.startswith("http://127.0.0.1:")
    token = srez(state, "runs", "token", run_id).stdout.strip()
    assert token == (state / "live" / run_id / "token").read_text().strip()
    ex = srez(state, "runs", "exec", run_id, "--", "/bin/sh", "-c", "echo hi; exit 3")
    assert (ex.returncode, ex.stdout) == (3, "hi\n")
    assert "listening" in srez(state, "runs", "logs", run_id).stdout
    assert "phase done" in srez(state, "runs", "logs", run_id, "--name", "daemon").stdout
    attached = srez(state, "attach", run_id, "--plain")
    assert attached.returncode == 0
    assert "session started" in attached.stdout and "== phase: done" in attached.stdout
    one_line_error(srez(state, "attach", run_id), "--plain")
    assert srez(state, "runs", "stop", run_id).returncode == 0
    assert "exited" in srez(state, "runs", "list", "--all").stdout
    for _ in range(2):
        rm = srez(state, "runs", "rm", run_id)
        assert rm.returncode == 0, rm.stderr
    assert srez(state, "runs", "list", "--all").stdout.strip() == "no runs"
    assert (results / "sre-002" / "none" / "heuristic" / run_id / "summary.json").is_file()


def test_exec_tty_drives_a_shell_through_a_real_terminal(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert srez(state, *RUN_SCRIPTED, "--keep", "--results", str(tmp_path / "r")).returncode == 0
    run_id = srez(state, "runs", "list").stdout.splitlines()[2].split()[0]
    master, slave = pty.openpty()
    env = {**os.environ, "SREZ_STATE": str(state)}
    cmd = [str(SREZ), "runs", "exec", run_id, "--tty", "--", "/bin/sh", "-c", "echo pty$((40+2))ok"]
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline and b"pty42ok" not in seen:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
        assert b"pty42ok" in seen, seen
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        srez(state, "runs", "rm", run_id)


def test_bad_input_is_one_line_exit_2(tmp_path: Path) -> None:
    state = tmp_path / "state"
    one_line_error(srez(state, "runs", "stop", "nope"), "no local run 'nope'")
    one_line_error(
        srez(state, *RUN_SCRIPTED, "--backend", "inline", "--keep"), "--keep needs a daemon"
    )
    one_line_error(srez(state, *run_args("sre-999", "scripted")), "sre-999")
    one_line_error(srez(state, "runs", "exec", "x"), "needs a command")
    one_line_error(srez(state, "runs", "exec", "x", "--tty"), "--tty needs a terminal")
    one_line_error(srez(state, "runs", "list", "--backend", "kubernetes"), "invalid choice")
    gone = srez(state, "runs", "rm", "20250314T100000Z-0123abcd")
    assert gone.returncode == 0 and "already gone" in gone.stdout


def test_eval_on_local_runs_in_parallel_and_reports(tmp_path: Path) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    proc = srez(
        state,
        "eval",
        "--backend",
        "local",
        "--parallel",
        "2",
        "--agent",
        "scripted,random",
        "--tasks",
        "sre-001,sre-002",
        "--results",
        str(results),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    runs = report["runs"]
    assert len(runs) == 4
    assert {(r["task_id"], r["agent"]) for r in runs} == {
        (t, a) for t in ("sre-001", "sre-002") for a in ("scripted", "random")
    }
    assert all(Path(r["run_dir"], "mirror.json").is_file() for r in runs)
    assert srez(state, "runs", "list", "--all").stdout.strip() == "no runs"
    one_line_error(  # a held-out set runs on local too; a folder with no task file does not
        srez(
            state, "eval", "--backend", "local", "--agent", "scripted", "--tasks-dir", str(tmp_path)
        ),
        "no task files (*.yaml)",
    )


@pytest.mark.parametrize(
    "payload",
    [
        "\x1b[2J\x1b]52;c;cGF3bmVk\x07",
        "over\rwrite",
        "\u202eevil",
        "\x9b31m",
        "[link=file:///etc/passwd]x[/]",
    ],
)
def test_attach_never_prints_a_raw_control(payload: str) -> None:
    entries = [
        Assistant(seq=1, ts="2025-03-14T10:00:00Z", text=f"hi {payload}"),
        ToolCall(seq=2, ts="2025-03-14T10:00:00Z", call_id="c", name=payload, args={"k": payload}),
        ToolResult(
            seq=3,
            ts="2025-03-14T10:00:00Z",
            call_id="c",
            status="error",
            result=payload,
            duration_ms=1,
            step=1,
            steps_left=1,
        ),
    ]
    for entry in entries:
        text = render_entry(entry)
        assert not [c for c in text if (ord(c) < 0x20 and c not in "\n") or 0x7F <= ord(c) <= 0x9F]
        assert "\u202e" not in text
