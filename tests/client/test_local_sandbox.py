"""The ``local`` backend's bubblewrap sandbox against a hostile agent, through real ``srez run``s
(docs/security.md §4.8 tests 43 and 44; :mod:`srez_daemon.sandbox`).

The hostile agent (``tests/fakes/hostile_agent.py``) leaves a ``setsid`` + double-forked
grandchild that rewrites ``result.json`` and ``summary.json`` once the run is graded, appends forged
tool records to ``archive/dialog.jsonl``, and reads its task file and the run's token. Each test
here asserts one of those fails. ``SREZ_TEST_SANDBOX=none`` runs the same tests without the
sandbox (the ``local`` backend as it was): each attack then succeeds and its test fails, which is
how they were checked to be able to fail.

Also here: a run where bubblewrap is missing still works, warns on stderr and records
``isolation: none``; the replay agent and a bring-your-own agent with a relative path run in the
sandbox; the sandbox dies with the daemon.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from srez_env.tasks import load_tasks

SREZ = Path(sys.executable).parent / "srez"
HOSTILE = Path(__file__).resolve().parents[1] / "fakes" / "hostile_agent.py"
MODE = os.environ.get("SREZ_TEST_SANDBOX", "bubblewrap")
GRADE_RE = re.compile(r"^grade:\s+reward (\S+), resolved (\w+), passed (\w+)$", re.MULTILINE)
EVALUATOR_RE = re.compile(r"graded: reward (\S+) resolved (\w+) passed (\w+)")


def marked(mark: str) -> list[psutil.Process]:
    """Processes whose command line carries ``mark`` (the hostile agent's)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if any(mark in part for part in cmdline):
            found.append(proc)
    return found


def kill_marked(mark: str) -> None:
    for proc in marked(mark):  # started by this test: end them by pid
        with contextlib.suppress(psutil.Error):
            proc.kill()


def agent_name(agent_cmd: list[str] | None) -> str:
    return "cmd:custom" if agent_cmd else "heuristic"


def results_of(tmp_path: Path, task: str, agent_cmd: list[str] | None) -> Path:
    """The one run folder ``srez_run`` filed (custom commands under their own name)."""
    name = agent_name(agent_cmd).removeprefix("cmd:")
    (folder,) = (tmp_path / "results" / task / "none" / name).iterdir()
    return folder


def srez_run(
    tmp_path: Path, task: str, agent_cmd: list[str] | None, **env: str
) -> subprocess.CompletedProcess[str]:
    run_env = {
        **os.environ,
        "SREZ_STATE": str(tmp_path / "state"),
        "SREZ_SANDBOX": MODE,
        **({"SREZ_AGENT_CMD": json.dumps(agent_cmd)} if agent_cmd else {}),
        **env,
    }
    # a custom command is an agent of its own (cmd:NAME); without one, the built-in heuristic
    argv = [str(SREZ), "run", "--task", task, "--agent", agent_name(agent_cmd)]
    return subprocess.run(
        [*argv, "--results", str(tmp_path / "results")],
        capture_output=True,
        text=True,
        env=run_env,
        cwd=tmp_path,
        timeout=120,
    )


@dataclass
class Attack:
    """One hostile run: what ``srez run`` said, the results folder, the agent's own report."""

    done: subprocess.CompletedProcess[str]
    folder: Path
    report: dict[str, list[dict[str, object] | str]]
    survivors: list[str]
    mark: str


@pytest.fixture(scope="module")
def attack(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Attack]:
    if MODE == "bubblewrap":
        request.getfixturevalue("bwrap")
    tmp_path = tmp_path_factory.mktemp("attack")
    mark = f"hostile-{uuid.uuid4().hex}"
    state = tmp_path / "state"
    try:
        hostile = [sys.executable, str(HOSTILE), str(state), mark, "attack"]
        done = srez_run(tmp_path, "sre-001", hostile)
        survivors = [" ".join(p.cmdline()) for p in marked(mark)]
        folder = results_of(tmp_path, "sre-001", hostile)
        report: dict[str, list[dict[str, object] | str]] = {}
        for line in (folder / "archive" / "dialog.jsonl").read_text().splitlines():
            entry = json.loads(line)
            if entry["type"] == "assistant":
                report = json.loads(entry["text"])
        yield Attack(done, folder, report, survivors, mark)
    finally:
        kill_marked(mark)


def test_sandbox_a_grade_reported_equals_the_evaluators(attack: Attack) -> None:
    assert attack.done.returncode in (0, 1), attack.done.stderr[-2000:]
    reported = GRADE_RE.search(attack.done.stdout)
    logged = EVALUATOR_RE.search((attack.folder / "logs" / "evaluator.log").read_text())
    assert reported is not None and logged is not None, attack.done.stdout
    assert float(reported[1]) == float(logged[1])
    assert (reported[2], reported[3]) == ("no", "no") and (logged[2], logged[3]) == ("False",) * 2
    result = json.loads((attack.folder / "result.json").read_text())
    summary = json.loads((attack.folder / "summary.json").read_text())
    assert result["reward"]["total"] == summary["reward"] == float(logged[1]) < 1.0
    assert result["passed"] is summary["passed"] is False


def test_sandbox_a_no_agent_process_survives_the_agent_phase(attack: Attack) -> None:
    assert attack.survivors == []


def test_sandbox_b_forged_dialog_lines_never_reach_results(attack: Attack) -> None:
    dialog = (attack.folder / "archive" / "dialog.jsonl").read_text()
    assert attack.mark not in dialog
    reached = [p for p in attack.report["dialog"] if isinstance(p, str) and ":" not in p]
    assert reached == []  # not a single dialog.jsonl was even opened


def test_sandbox_c_task_file_and_token_are_not_readable(attack: Attack) -> None:
    assert len(attack.report["task_file"]) == 1 and attack.report["token"]  # it did try
    readable = {
        what: [p for p in attack.report[what] if isinstance(p, dict) and "bytes" in p]
        for what in ("task_file", "token")
    }
    assert readable == {"task_file": [], "token": []}
    import srez_env

    installed = Path(srez_env.__file__).parent / "tasks" / "sre-001.yaml"
    dialog = (attack.folder / "archive" / "dialog.jsonl").read_text()
    assert hashlib.sha256(installed.read_bytes()).hexdigest() not in dialog


def test_sandbox_records_isolation_in_run_json(attack: Attack) -> None:
    manifest = json.loads((attack.folder / "run.json").read_text())
    assert manifest["isolation"] == MODE
    assert ("not isolated" in attack.done.stderr) is (MODE == "none")


def test_without_bwrap_a_run_works_warns_and_records_isolation_none(tmp_path: Path) -> None:
    done = srez_run(tmp_path, "sre-001", None, PATH="/nonexistent", SREZ_SANDBOX="auto")
    assert done.returncode == 0, done.stderr[-2000:]
    warnings = [line for line in done.stderr.splitlines() if "not isolated" in line]
    assert len(warnings) == 1 and "bwrap is not installed" in warnings[0]
    assert "apt-get install bubblewrap" in warnings[0] and "--backend docker" in warnings[0]
    folder = results_of(tmp_path, "sre-001", None)
    assert json.loads((folder / "run.json").read_text())["isolation"] == "none"
    assert json.loads((folder / "summary.json").read_text())["status"] == "ok"


def test_bubblewrap_required_but_missing_refuses_the_run(tmp_path: Path) -> None:
    done = srez_run(tmp_path, "sre-001", None, PATH="/nonexistent", SREZ_SANDBOX="bubblewrap")
    assert done.returncode != 0
    assert "SREZ_SANDBOX=bubblewrap, but bwrap is not installed" in done.stderr
    assert not (tmp_path / "results").exists()


def test_replay_agent_reads_its_file_in_the_sandbox(tmp_path: Path, bwrap: None) -> None:
    from client_helpers import expert_actions

    (task,) = load_tasks(["sre-002"])
    replay = tmp_path / "moves.jsonl"
    replay.write_text("".join(json.dumps(a) + "\n" for a in expert_actions(task)))
    run_env = {**os.environ, "SREZ_STATE": str(tmp_path / "state"), "SREZ_SANDBOX": "bubblewrap"}
    done = subprocess.run(
        [str(SREZ), "run", "--task", "sre-002", "--agent", "replay:moves.jsonl"]
        + ["--results", str(tmp_path / "results")],
        capture_output=True, text=True, env=run_env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "passed yes" in done.stdout


def test_byo_agent_with_a_relative_path_runs_in_the_sandbox(tmp_path: Path, bwrap: None) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "byo_agent.py"
    (tmp_path / "my_agent.py").write_bytes(example.read_bytes())
    command = [sys.executable, "my_agent.py"]
    done = srez_run(tmp_path, "sre-003", command, SREZ_SANDBOX="bubblewrap")
    assert done.returncode == 0, done.stderr[-2000:]
    folder = results_of(tmp_path, "sre-003", command)
    assert "submitted at step" in (folder / "logs" / "agent.log").read_text()


def test_the_sandbox_dies_with_the_daemon(tmp_path: Path, bwrap: None) -> None:
    mark = f"linger-{uuid.uuid4().hex}"
    run_env = {
        **os.environ,
        "SREZ_STATE": str(tmp_path / "state"),
        "SREZ_SANDBOX": "bubblewrap",
        "SREZ_AGENT_CMD": json.dumps([sys.executable, str(HOSTILE), "/none", mark, "linger"]),
    }
    proc = subprocess.Popen(
        [str(SREZ), "run", "--task", "sre-001", "--agent", "cmd:hostile"]
        + ["--results", str(tmp_path / "results")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=run_env, cwd=tmp_path,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        # bwrap, the sandbox's init, the agent and its escaped grandchild
        while len(marked(mark)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(marked(mark)) == 4
        (record,) = (tmp_path / "state" / "live").glob("*/record.json")
        daemon = json.loads(record.read_text())["pid"]
        os.kill(daemon, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while marked(mark) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert marked(mark) == []
    finally:
        kill_marked(mark)
        proc.kill()
        proc.wait()
