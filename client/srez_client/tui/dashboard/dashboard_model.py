"""The managed-run dashboard as a pure view model: one line per run, one per target under it.

No urwid and no I/O: :class:`DashboardModel` is fed :class:`~.source.RunStatus` snapshots and
turns key names (the ``dashboard`` context of ``tui/keys.py``) into :class:`Action` values that
the screen carries out, so the list, the cursor and which action applies to what are tested as
plain Python.

The figures per target (decisions where the design is silent):

* state: ``running`` while the run's runner works on this target, else the API's ``pending``
  (nothing run), ``partial`` or ``done``;
* ``done/total``, score (mean ``reward.total``) and passed come from the API's target summary
  (:func:`srez_client.managed.api.status`), so the dashboard and ``srez managed status`` agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final

from srez_client.managed.models import ManagedRun
from srez_client.sanitize import sanitize_line
from srez_client.tui.dashboard.source import RunStatus
from srez_client.tui.keys import Context, context_action

NEEDS_TARGET: Final = frozenset({"monitor", "run_target", "remove_target", "delete_artifacts"})
NEEDS_RUN: Final = frozenset(
    {"add_target", "pause", "stop", "clear_pause", "summarize", "export_queue", "delete_run"}
)
HELP: Final = (
    "n new · Enter monitor · r run · a/x add/remove target · p pause · s/S stop now · "
    "c clear pause · b summaries · e export queue · D delete target artefacts · X delete run · "
    "q quit · ? all keys"
)


@dataclass(frozen=True, slots=True)
class Action:
    """What the user asked for, and on which run and target."""

    name: str
    run: str | None = None
    target: str | None = None
    ref: str | None = None
    """For ``open_task``: the run id or results folder to open in the run viewer."""


@dataclass(frozen=True, slots=True)
class Item:
    """One line of the list: a run header (``target`` None) or a target under it."""

    run: str
    target: str | None
    text: str
    style: str
    """``run``, ``running``, ``done``, ``partial``, ``pending`` or ``paused``."""


@dataclass(frozen=True, slots=True)
class TargetFigures:
    """The numbers shown for a target."""

    state: str
    completed: int
    total: int
    score: float | None
    passed: int


def target_figures(status: RunStatus, target: str) -> TargetFigures:
    """State, completed count and score of one target, from the API's target summary."""
    summary = status.summary(target)
    runner = status.runner
    running = runner is not None and runner.target == target
    if summary is None:
        return TargetFigures("running" if running else "pending", 0, len(status.run.tasks), None, 0)
    return TargetFigures(
        state="running" if running else summary.state,
        completed=summary.completed,
        total=summary.tasks_total,
        score=summary.mean_reward,
        passed=round((summary.passed_rate or 0.0) * summary.completed),
    )


def budget_text(run: ManagedRun) -> str:
    """``$5.00/day`` or ``no budget``."""
    return "no budget" if run.daily_budget_usd is None else f"${run.daily_budget_usd:.2f}/day"


def score_text(score: float | None) -> str:
    """A mean reward, or a dash before any task completed."""
    return "  -  " if score is None else f"{score:.3f}"


def _run_line(status: RunStatus) -> tuple[str, str]:
    run = status.run
    parts = [sanitize_line(run.name), sanitize_line(run.backend), f"{len(run.tasks)} tasks"]
    parts.append(budget_text(run))
    style = "run"
    if status.pause is not None:
        why = sanitize_line(status.pause.message or status.pause.reason)
        parts.append(f"PAUSED ({why})")
        style = "paused"
    runner = status.runner
    if runner is not None:
        where = "/".join(sanitize_line(p) for p in (runner.target, runner.task) if p)
        parts.append(f"runner pid {runner.pid}" + (f" on {where}" if where else ""))
    return " · ".join(parts), style


def _target_line(status: RunStatus, target: str, agent: str) -> tuple[str, str]:
    fig = target_figures(status, target)
    count = f"{fig.completed}/{fig.total}"
    text = (
        f"  {sanitize_line(target):<40} {agent:<9} {fig.state:<8} {count:>7}  "
        f"score {score_text(fig.score)}  passed {fig.passed}"
    )
    return text, fig.state


class CursorModel:
    """A list with a cursor and a one-line message, driven by the keys of one context of
    ``tui/keys.py``: what the dashboard and the monitor share."""

    context: ClassVar[Context]

    def __init__(self) -> None:
        self.cursor = 0
        self.message = ""
        self.error = False

    def row_count(self) -> int:
        """How many rows the cursor moves over."""
        raise NotImplementedError

    def take_key(self, key: str) -> str | None:
        """Clears the message and moves the cursor on the cursor keys; the action any other
        bound key asks for (None: nothing more to do)."""
        name = context_action(self.context, key)
        self.message, self.error = "", False
        if name in ("cursor_up", "cursor_down"):
            step = -1 if name == "cursor_up" else 1
            self.cursor = max(0, min(self.row_count() - 1, self.cursor + step))
            return None
        return name

    def _say(self, message: str, error: bool = False) -> None:
        self.message, self.error = message, error


class DashboardModel(CursorModel):
    """The list of managed runs with a cursor that survives refreshes."""

    context: ClassVar[Context] = "dashboard"

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[RunStatus] = []

    def set_runs(self, runs: list[RunStatus]) -> None:
        """Replaces the snapshot; the cursor stays on the same run and target when they exist."""
        key = self.focused_key()
        self.runs = sorted(runs, key=lambda s: s.name)
        keys = [(i.run, i.target) for i in self.items()]
        if key in keys:
            self.cursor = keys.index(key)
        else:
            self.cursor = min(self.cursor, max(0, len(keys) - 1))

    def items(self) -> list[Item]:
        """Every line, runs in name order, targets in queue order under their run."""
        out = []
        for status in self.runs:
            text, style = _run_line(status)
            out.append(Item(status.name, None, text, style))
            for target in status.run.targets:
                text, style = _target_line(status, target.name, target.agent)
                out.append(Item(status.name, target.name, text, style))
        return out

    def focused_key(self) -> tuple[str, str | None] | None:
        """``(run, target)`` under the cursor (target None on a run line)."""
        items = self.items()
        if not items:
            return None
        item = items[min(self.cursor, len(items) - 1)]
        return item.run, item.target

    def row_count(self) -> int:
        """Run and target lines."""
        return len(self.items())

    def run(self, name: str) -> RunStatus | None:
        """The snapshot of run ``name``."""
        return next((s for s in self.runs if s.name == name), None)

    def press(self, key: str) -> Action | None:
        """Moves the cursor, or returns the action a key asks for (None: nothing to do)."""
        name = self.take_key(key)
        if name is None:
            return None
        focus = self.focused_key()
        run, target = focus if focus is not None else (None, None)
        if name in NEEDS_TARGET and target is None:
            self._say("move to a target line first (Up/Down)", error=True)
            return None
        if name in NEEDS_RUN and run is None:
            self._say("no managed run yet: n creates one", error=True)
            return None
        return Action(name, run, target)


__all__ = [
    "HELP",
    "Action",
    "CursorModel",
    "DashboardModel",
    "Item",
    "TargetFigures",
    "budget_text",
    "score_text",
    "target_figures",
]
