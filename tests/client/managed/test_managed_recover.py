"""The resume's cleanup pass decides by the run's summary (docs/managed.md, "Resume"): a run the
backend still lists as running when the runner died, but whose summary says it ended by itself
(a submit, graded), is adopted as completed once stopped and mirrored, never marked
interrupted and run again; a run the stop really cut is interrupted.

The backend here is a stand-in that answers for one run (a unit test of the pass's logic); the
run and its results folder are real (an inline run). The kill -9 tests of the whole runner are
``test_managed_crash.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import orjson

from srez_client.backends.base import Backend, RunHandle
from srez_client.backends.inline.host import run_inline
from srez_client.managed.models import Checkpoint, ManagedRun, TaskRecord, make_target
from srez_client.managed.recover import _recover
from srez_env.tasks import load_tasks


class OneRun:
    """Answers ``get`` with a handle still ``running``; records stops."""

    def __init__(self, handle: RunHandle) -> None:
        self.handle = handle
        self.stopped: list[str] = []

    async def get(self, run_id: str) -> RunHandle:
        return self.handle

    async def stop(self, handle: RunHandle) -> None:
        self.stopped.append(handle.run_id)

    async def remove(self, handle: RunHandle) -> None:
        """Nothing to remove."""


def _setting(tmp_path: Path, end_reason: str) -> tuple[OneRun, ManagedRun, TaskRecord, Path]:
    results = tmp_path / "results"
    (task,) = load_tasks(["sre-001"])
    run_id = run_inline(task, "scripted", 0, results).run_id
    (folder,) = [p for p in results.rglob(run_id) if p.is_dir()]
    if end_reason != "submit":  # what a run cut by the stop says of itself
        summary = orjson.loads((folder / "summary.json").read_bytes())
        summary.update(end_reason=end_reason, status="error", error="stopped", error_kind="harness")
        (folder / "summary.json").write_bytes(orjson.dumps(summary))
    target = make_target("scripted")
    run = ManagedRun(
        name="nightly", created_at="2026-01-01T00:00:00Z", backend="local",
        results_root=str(results), tasks=["sre-001"], targets=[target],
    )  # fmt: skip
    record = TaskRecord(
        task_id="sre-001", attempt=1, status="running", started_at="2026-01-01T00:00:00Z",
        run_id=run_id,
    )  # fmt: skip
    handle = RunHandle(
        run_id=run_id, backend="local", task_id="sre-001", agent="scripted", model="none",
        status="running", finished=False,
    )  # fmt: skip
    return OneRun(handle), run, record, folder


async def test_a_run_that_ended_by_submit_is_adopted_though_it_was_still_listed_running(
    tmp_path: Path,
) -> None:
    backend, run, record, folder = _setting(tmp_path, "submit")
    checkpoint = Checkpoint(target=run.targets[0].name, tasks={"sre-001": record})
    fixed = await _recover(
        cast(Backend, backend), tmp_path / "state", run, run.targets[0], record, checkpoint
    )
    assert backend.stopped == [record.run_id]  # stopped all the same: no orphan survives
    assert fixed.status == "completed", fixed
    assert fixed.results_dir == str(folder) and fixed.reward is not None


async def test_a_run_the_stop_cut_is_interrupted(tmp_path: Path) -> None:
    backend, run, record, _ = _setting(tmp_path, "stopped")
    checkpoint = Checkpoint(target=run.targets[0].name, tasks={"sre-001": record})
    fixed: Any = await _recover(
        cast(Backend, backend), tmp_path / "state", run, run.targets[0], record, checkpoint
    )
    assert fixed.status == "interrupted", fixed
