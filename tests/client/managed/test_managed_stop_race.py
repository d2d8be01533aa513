"""A stop that lands after a task's run finished, before the runner recorded its result; and what
``runner.json`` says once the last result is recorded.

The runner runs in this process on the ``inline`` backend, wrapped so that the stop is sent at a
chosen point of the attempt: when the run has returned (finished and graded, nothing recorded),
or when the runner removes the finished run (just before the outcome is written). The graded
result must be kept (``completed``) and the task never launched again on resume.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from srez_client.backends.base import LaunchSpec, RunHandle
from srez_client.backends.inline.backend import InlineBackend
from srez_client.managed import api
from srez_client.managed import runner as runner_module
from srez_client.managed.models import RunnerState, make_target
from srez_client.managed.outcome import STOPPED
from srez_client.managed.runner import EXIT_STOPPED, Runner
from srez_client.managed.store import ManagedPaths, load_checkpoint, read_model, verified

TASKS = ("sre-001", "sre-002")


class StopInTheWindow(InlineBackend):
    """The inline backend, calling ``on_window`` once at ``point`` of the first task's attempt."""

    def __init__(self, state_dir: Path, point: str) -> None:
        super().__init__(state_dir)
        self.point = point
        self.on_window: Callable[[], None] = lambda: None
        self.launched: list[str] = []
        self._fired = False

    def _window(self, point: str) -> None:
        if point == self.point and not self._fired:
            self._fired = True
            self.on_window()

    async def launch(self, spec: LaunchSpec) -> RunHandle:
        self.launched.append(spec.task_id)
        handle = await super().launch(spec)
        self._window("finished")  # the run is over and graded; the runner has not seen it yet
        return handle

    async def remove(self, run: RunHandle) -> None:
        self._window("remove")  # mirrored; the outcome is written right after this
        await super().remove(run)


@pytest.mark.parametrize("point", ["finished", "remove"])
async def test_managed_stop_after_a_run_finished_keeps_its_graded_result(
    tmp_path: Path, point: str
) -> None:
    results, state = tmp_path / "results", tmp_path / "state"
    api.create_managed(
        results, "race", targets=[make_target("scripted")], tasks=TASKS, backend="inline"
    )
    paths = ManagedPaths.of(results, "race")
    backend = StopInTheWindow(state, point)
    runner = Runner(paths, backend, state, environ={}, png=False)
    backend.on_window = runner.request_stop

    assert await runner.main() == EXIT_STOPPED
    first = load_checkpoint(paths, "scripted").tasks
    assert list(first) == ["sre-001"]  # nothing new started after the stop
    kept = first["sre-001"]
    assert (kept.status, kept.attempt, kept.error_kind, kept.error) == ("completed", 1, None, None)
    assert kept.reward is not None and verified(kept.results_dir, kept.result_sha256)

    resumed = Runner(paths, backend, state, environ={}, png=False)
    assert await resumed.main() == 0
    assert backend.launched == ["sre-001", "sre-002"]  # sre-001 was never run twice
    final = load_checkpoint(paths, "scripted").tasks
    assert final["sre-001"] == kept
    assert final["sre-002"].status == "completed"


async def test_managed_stop_before_grading_is_interrupted_with_a_kind(tmp_path: Path) -> None:
    """A run the stop ended ungraded is ``interrupted``, says ``stopped``, and runs again."""
    results, state = tmp_path / "results", tmp_path / "state"
    api.create_managed(
        results, "cut", targets=[make_target("scripted")], tasks=TASKS[:1], backend="inline"
    )
    paths = ManagedPaths.of(results, "cut")

    class Ungraded(InlineBackend):
        async def launch(self, spec: LaunchSpec) -> RunHandle:
            runner.request_stop()
            msg = "the run ended before its grade (stopped)"
            raise OSError(msg)

    runner = Runner(paths, Ungraded(state), state, environ={}, png=False)
    assert await runner.main() == EXIT_STOPPED
    record = load_checkpoint(paths, "scripted").tasks["sre-001"]
    assert (record.status, record.error_kind) == ("interrupted", STOPPED)
    assert record.error is not None and "before its grade" in record.error

    resumed = Runner(paths, InlineBackend(state), state, environ={}, png=False)
    assert await resumed.main() == 0
    again = load_checkpoint(paths, "scripted").tasks["sre-001"]
    assert (again.status, again.attempt) == ("completed", 2)


async def test_managed_runner_state_names_no_task_once_the_queue_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the summaries are written, ``runner.json`` says the runner runs no task: the
    monitor never shows ``running (task …)`` next to a target whose every task is recorded."""
    results, state = tmp_path / "results", tmp_path / "state"
    api.create_managed(
        results, "end", targets=[make_target("scripted")], tasks=TASKS[:1], backend="inline"
    )
    paths = ManagedPaths.of(results, "end")
    seen: list[tuple[str | None, str | None, str]] = []

    def summarize(at: ManagedPaths, *, png: bool) -> None:
        runner = read_model(at.runner_json, RunnerState)
        assert runner is not None
        status = load_checkpoint(at, "scripted").tasks["sre-001"].status
        seen.append((runner.target, runner.task, status))

    monkeypatch.setattr(runner_module, "summarize", summarize)
    assert await Runner(paths, InlineBackend(state), state, environ={}, png=False).main() == 0
    assert seen == [(None, None, "completed")]


async def test_managed_stop_whose_wait_is_cut_still_adopts_a_finished_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop's grace runs out while the runner is still busy with a run that had finished
    (here: removing it hangs): its complete results folder is adopted, not thrown away."""
    monkeypatch.setattr(runner_module, "STOP_GRACE_S", 0.2)
    results, state = tmp_path / "results", tmp_path / "state"
    api.create_managed(
        results, "hang", targets=[make_target("scripted")], tasks=TASKS, backend="inline"
    )
    paths = ManagedPaths.of(results, "hang")

    class Hangs(StopInTheWindow):
        async def remove(self, run: RunHandle) -> None:
            self._window("remove")
            await asyncio.Event().wait()  # never returns: cancelled at the end of the grace

    backend = Hangs(state, "remove")
    runner = Runner(paths, backend, state, environ={}, png=False)
    backend.on_window = runner.request_stop
    assert await runner.main() == EXIT_STOPPED
    kept = load_checkpoint(paths, "scripted").tasks["sre-001"]
    assert (kept.status, kept.error_kind) == ("completed", None)
    assert verified(kept.results_dir, kept.result_sha256)
