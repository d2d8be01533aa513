"""docs/security.md §4 tests 36 and 37: kill -9 the runner and resume; crash points of atomic JSON.

The full sweeps (20 kills, 1000 crash points) are ``slow``; reduced ones (3 kills, 60 crash
points) run in the fast suite.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest
from managed_kit import Kit, baseline_queue, make_kit, results_dirs, running_local_runs

from srez_client.managed.ledger import BudgetLedger
from srez_client.managed.store import verified

TASKS = "sre-001,sre-002,sre-003"
SCORES = ("completed", "mean_reward", "resolved_rate", "passed_rate", "resolved_by_difficulty")


def _scores(kit: Kit, name: str) -> dict[str, dict[str, object]]:
    summary = json.loads((kit.managed(name) / "summary.json").read_text())
    return {t["target"]: {k: t[k] for k in SCORES} for t in summary["targets"]}


def _check_completed_verified(kit: Kit, name: str, targets: list[str]) -> int:
    """Every completed record has a complete results folder with its recorded hash."""
    count = 0
    for target in targets:
        for record in kit.output(name, target).values():
            if record["status"] == "completed":
                assert verified(str(record["results_dir"]), str(record["result_sha256"])), record
                count += 1
    return count


def kill_sweep(kit: Kit, kills: int, seed: int, tasks: str = TASKS, longest_s: float = 2.5) -> int:
    """Kill the runner ``kills`` times at random moments, resume, check; returns the kills made."""
    rng = random.Random(seed)
    n_tasks = len(tasks.split(","))
    targets = ["scripted", "random"]
    kit.srez(
        "managed",
        *baseline_queue("k", tasks, "local", ",".join(targets)),
    )
    kit.srez(
        "managed",
        *baseline_queue("ref", tasks, "inline", ",".join(targets)),
    )
    kit.srez("managed", "run", "ref")
    slow = kit.slow(1.0)  # each task about 1.2 s: the kills land mid-queue
    completed_before = 0
    done = False
    killed = 0
    for _ in range(kills):
        runner = kit.runner("k", env=slow)
        time.sleep(rng.uniform(0.1, longest_s))
        if runner.poll() is not None:
            assert runner.returncode == 0, kit.runner_err()
            done = True
            break
        os.kill(runner.pid, signal.SIGKILL)
        killed += 1
        runner.wait()
        completed = _check_completed_verified(kit, "k", targets)
        assert completed >= completed_before, "a completed task was lost"
        completed_before = completed
    if not done:
        kit.srez("managed", "run", "k", env=slow)
    assert _check_completed_verified(kit, "k", targets) == 2 * n_tasks
    for target in targets:
        records = kit.output("k", target)
        claimed = [
            str(a["results_dir"])
            for r in records.values()
            for a in [*r["previous"], r]  # type: ignore[misc]
            if a["results_dir"] is not None
        ]
        assert len(claimed) == len(set(claimed)), "two attempts claim one results folder"
        on_disk = results_dirs(kit.results, target) - results_dirs_of_ref(kit, target)
        assert on_disk == set(claimed), "a results folder no attempt accounts for (or missing)"
        completed_dirs = [r["results_dir"] for r in records.values() if r["status"] == "completed"]
        assert len(completed_dirs) == n_tasks
    assert running_local_runs(kit.state) == []  # no orphan daemon after the resume's cleanup
    assert _scores(kit, "k") == _scores(kit, "ref")
    return killed


def results_dirs_of_ref(kit: Kit, target: str) -> set[str]:
    return {str(r["results_dir"]) for r in kit.output("ref", target).values()}


def test_managed_kill9_resume_loses_nothing_reduced(tmp_path: Path) -> None:
    assert kill_sweep(make_kit(tmp_path), kills=3, seed=1) >= 2


@pytest.mark.slow
def test_managed_kill9_resume_loses_nothing_20_kills(tmp_path: Path) -> None:
    ten = ",".join(f"sre-{i:03d}" for i in range(1, 11))
    # 20 task runs, killed at most 1.5 s apart: every one of the 20 kills lands mid-queue
    assert kill_sweep(make_kit(tmp_path), kills=20, seed=7, tasks=ten, longest_s=1.5) == 20


LEDGER_WRITER = """\
import sys
from pathlib import Path
from srez_client.managed.ledger import BudgetLedger
ledger = BudgetLedger(Path(sys.argv[1]))
print("ready", flush=True)
i = 0
while True:
    key = f"run/t/sre-{i:03d}/1"
    if not ledger.reserve("2026-02-02", key, 0.5, 1e9):
        break
    ledger.settle("2026-02-02", key, 0.25)
    i += 1
"""


def ledger_kills(tmp: Path, kills: int, seed: int) -> None:
    """kill -9 a process reserving and settling in the real ledger; what was spent (and the
    file) never goes down, and every line but a torn last one parses."""
    import subprocess
    import sys

    rng = random.Random(seed)
    folder = tmp / "budget"
    ledger = BudgetLedger(folder)
    spent, committed, size = 0.0, 0.0, 0
    for _ in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-c", LEDGER_WRITER, str(folder)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        with proc.stdout:
            assert proc.stdout.readline() == "ready\n"
            time.sleep(rng.uniform(0.05, 0.4))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        view = ledger.view("2026-02-02")
        new_size = ledger.path("2026-02-02").stat().st_size
        assert view.spent_usd >= spent
        assert view.committed_usd >= committed - 0.25 - 1e-9  # only a settle may release
        assert new_size >= size
        assert view.outstanding_usd <= 0.5 + 1e-9  # at most the one in flight
        spent, committed, size = view.spent_usd, view.committed_usd, new_size
    assert spent > 0


def test_managed_ledger_never_decreases_across_kill9(tmp_path: Path) -> None:
    ledger_kills(tmp_path, kills=4, seed=3)


@pytest.mark.slow
def test_managed_ledger_never_decreases_across_kill9_20(tmp_path: Path) -> None:
    ledger_kills(tmp_path, kills=20, seed=11)
