"""The live monitor of one target as a pure view model (no urwid, no I/O).

The screen polls the files (:mod:`.monitor_io`) and hands the model a :class:`MonitorData`; the
model turns it into header lines, one line per task and two log tails, and turns keys into
actions. Every string that came from a file is sanitised here, before any widget sees it.

Definitions (decisions where the design is silent):

* completed/total: tasks whose latest attempt is ``completed``, over the run's tasks.
* score: the mean ``reward.total`` of the completed tasks.
* evidence coverage: over the completed tasks whose ``result.json`` could be read, the mean share
  of the task's required evidence the agent witnessed (``metrics.evidence_witnessed`` over
  ``ground_truth.required_evidence``, the grade's ``evidence`` reward component); "full" counts
  the tasks where every required item was witnessed.
* errors, as the API's target summary counts them: ``provider``, attempts that ended on a
  provider error (earlier attempts included: they are retried and would otherwise vanish);
  ``agent``, completed tasks whose agent failed (the agent's result, counted in the score);
  ``harness``, tasks that failed on our side (not counted).
* budget left: the API's ``left_usd`` for today: the allowance minus what the shared ledger
  (``$SREZ_STATE/budget/``, all managed runs) has spent or reserved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Final

from srez_client.managed.models import TaskRecord
from srez_client.sanitize import sanitize_line
from srez_client.tui.dashboard.dashboard_model import (
    Action,
    CursorModel,
    budget_text,
    score_text,
    target_figures,
)
from srez_client.tui.dashboard.source import EndedLaunch, RunStatus
from srez_client.tui.keys import Context

HELP: Final = (
    "p pause after this task · s/S stop now (pause, end the in-flight run) · c clear pause · "
    "Enter open task · q back · ? all keys"
)
TAIL_LINES: Final = 200
"""Lines kept of each log."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """The evidence figures of one graded task (from its ``result.json``)."""

    witnessed: int
    required: int

    @property
    def share(self) -> float:
        """Witnessed over required (1.0 when nothing is required)."""
        return self.witnessed / self.required if self.required else 1.0


@dataclass(frozen=True, slots=True)
class MonitorData:
    """One poll's worth of what the monitor shows."""

    status: RunStatus | None
    evidence: dict[str, Evidence] = field(default_factory=dict)
    """By task id, for the completed tasks whose ``result.json`` was readable."""
    console: tuple[str, ...] = ()
    runner_log: tuple[str, ...] = ()
    problem: str = ""
    """Why the snapshot is missing or partial (shown, not raised)."""
    ended: tuple[EndedLaunch, ...] = ()
    """The runners started from this TUI that exited since the last poll."""


class MonitorModel(CursorModel):
    """What the monitor shows of one target of one managed run."""

    context: ClassVar[Context] = "monitor"

    def __init__(self, run: str, target: str) -> None:
        super().__init__()
        self.run = run
        self.target = target
        self.data = MonitorData(None)

    def update(self, data: MonitorData) -> list[str]:
        """Takes a new poll; the cursor stays on its task index. Returns the lines for the
        status bar: how the runners that ended meanwhile ended (this target's is also the
        message), replacing what the bar said when one was started."""
        self.data = data
        self.cursor = min(self.cursor, max(0, len(self.tasks()) - 1))
        notices = []
        for launch in data.ended:
            line = sanitize_line(launch.line())
            if (launch.run, launch.target) == (self.run, self.target):
                self._say(line, error=launch.failed)
            notices.append(line)
        return notices

    def tasks(self) -> list[TaskRecord]:
        """The target's task records, in the run's task order."""
        status = self.data.status
        if status is None:
            return []
        records = status.checkpoint(self.target).tasks
        order = {t: i for i, t in enumerate(status.run.tasks)}
        return sorted(records.values(), key=lambda r: order.get(r.task_id, len(order)))

    def row_count(self) -> int:
        """Task lines."""
        return len(self.tasks())

    def header(self) -> list[str]:
        """Status, counts, score, evidence, errors and budget, one line each."""
        status = self.data.status
        title = f"{sanitize_line(self.run)} / {sanitize_line(self.target)}"
        if status is None:
            return [title, sanitize_line(self.data.problem or "reading…")]
        fig = target_figures(status, self.target)
        state = fig.state
        runner = status.runner
        if runner is not None and runner.target == self.target:
            task = f"task {sanitize_line(runner.task)}, " if runner.task else "between tasks, "
            state += f" ({task}pid {runner.pid})"
        elif runner is not None and runner.target is None:
            state += f" · runner pid {runner.pid} writing the summaries"
        if status.pause is not None:
            why = status.pause.message or status.pause.reason
            state += f" · PAUSE set ({sanitize_line(why)})"
        lines = [
            title,
            f"state     {state}",
            f"progress  {fig.completed}/{fig.total} completed · score {score_text(fig.score)}"
            f" · passed {fig.passed}",
            f"evidence  {self.evidence_text()}",
            f"errors    {self.errors_text()}",
            f"budget    {self.budget_line()}",
        ]
        if self.data.problem:
            lines.append(f"note      {sanitize_line(self.data.problem)}")
        return lines

    def evidence_text(self) -> str:
        """``72% (full on 5/8 graded tasks)``, or why there is no figure."""
        graded = list(self.data.evidence.values())
        if not graded:
            return "no graded task yet"
        mean = sum(e.share for e in graded) / len(graded)
        full = sum(1 for e in graded if e.witnessed >= e.required)
        return f"{mean:.0%} (full on {full}/{len(graded)} graded tasks)"

    def errors_text(self) -> str:
        """``provider 2 · agent 1 · harness 0`` (see the module docstring)."""
        status = self.data.status
        summary = status.summary(self.target) if status is not None else None
        if summary is None:
            return "provider 0 · agent 0 · harness 0"
        return (
            f"provider {summary.provider_error_attempts} · agent {summary.agent_errors}"
            f" · harness {summary.harness_errors}"
        )

    def budget_line(self) -> str:
        """``$3.20 left today (2026-11-30) of $5.00/day``, or ``no daily budget``."""
        status = self.data.status
        budget = status.status.budget if status is not None else None
        if status is None or budget is None:
            return "no daily budget"
        spent = f"spent ${budget.spent_usd:.2f}, reserved ${budget.outstanding_usd:.2f}"
        return f"${budget.left_usd:.2f} left today ({budget.day}) of {budget_text(status.run)}; {spent}"

    def task_lines(self) -> list[tuple[bool, str]]:
        """``(focused, text)`` per task record."""
        out = []
        for i, record in enumerate(self.tasks()):
            reward = "  -  " if record.reward is None else f"{record.reward:.3f}"
            ev = self.data.evidence.get(record.task_id)
            evidence = f"ev {ev.witnessed}/{ev.required}" if ev else ""
            error = " " + ": ".join(p for p in (record.error_kind, record.error) if p)
            text = (
                f"{sanitize_line(record.task_id):<10} {record.status:<14} try {record.attempt}"
                f"  reward {reward}  {evidence:<8}{sanitize_line(error)}".rstrip()
            )
            out.append((i == self.cursor, text))
        return out

    def console(self) -> list[str]:
        """The console log's tail, sanitised."""
        return [sanitize_line(line) for line in self.data.console[-TAIL_LINES:]]

    def runner_log(self) -> list[str]:
        """The runner log's tail, sanitised."""
        return [sanitize_line(line) for line in self.data.runner_log[-TAIL_LINES:]]

    def press(self, key: str) -> Action | None:
        """Moves the cursor, or returns the action a key asks for."""
        name = self.take_key(key)
        if name is None:
            return None
        if name == "open_task":
            return self._open_task()
        return Action(name, self.run, self.target)

    def _open_task(self) -> Action | None:
        tasks = self.tasks()
        if not tasks:
            self._say("no task has started yet", error=True)
            return None
        record = tasks[self.cursor]
        ref = record.results_dir or record.run_id
        if ref is None:
            self._say(f"{record.task_id} has no run yet", error=True)
            return None
        return Action("open_task", self.run, self.target, ref)


__all__ = ["HELP", "Evidence", "MonitorData", "MonitorModel"]
