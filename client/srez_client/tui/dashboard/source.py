"""What the dashboard needs from managed runs, as a small protocol (no urwid, no I/O here).

The screens talk to a :class:`ManagedSource`; :mod:`.managed_source` implements it on the real
managed-run API (:mod:`srez_client.managed`) and the tests use the same implementation on a
temporary results root. Keeping the seam this narrow lets the view models be tested on plain
snapshots (:class:`RunStatus`) and keeps every blocking call in one place, which the screens run
through ``asyncio.to_thread``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from srez_client.managed.api import ManagedStatus
from srez_client.managed.models import Checkpoint, ManagedRun, PauseInfo, RunnerState, Target
from srez_client.managed.summary import TargetSummary


@dataclass(frozen=True, slots=True)
class RunStatus:
    """A snapshot of one managed run: ``run.json``, the API's status, and the checkpoints."""

    run: ManagedRun
    folder: Path
    status: ManagedStatus
    """What ``srez managed status`` shows: runner, pause, per-target summaries, budget."""
    checkpoints: dict[str, Checkpoint] = field(default_factory=dict)
    """``targets/<t>/output.json`` by target name (absent: nothing run yet)."""

    @property
    def name(self) -> str:
        """The run's name."""
        return self.run.name

    @property
    def pause(self) -> PauseInfo | None:
        """The ``PAUSE`` flag, if set."""
        return self.status.pause

    @property
    def runner(self) -> RunnerState | None:
        """The live runner (None when none runs)."""
        return self.status.runner

    def checkpoint(self, target: str) -> Checkpoint:
        """The checkpoint of ``target`` (empty when it never ran)."""
        return self.checkpoints.get(target) or Checkpoint(target=target)

    def summary(self, target: str) -> TargetSummary | None:
        """The API's figures for ``target``."""
        return next((s for s in self.status.targets if s.target == target), None)


QUIET_EXITS: Final[dict[int, str]] = {0: "done", 75: "paused", 143: "stopped", -15: "stopped"}
"""Runner exit statuses that are not failures, and what they mean (SIGTERM: -15 or 143)."""


@dataclass(frozen=True, slots=True)
class EndedLaunch:
    """A runner started by :meth:`ManagedSource.start` that has exited (and was reaped)."""

    run: str
    target: str
    code: int
    """Its exit status (negative: the signal that ended it)."""
    last_line: str = ""
    """The last line it printed before its own logs were open (sanitised), for a failure."""

    @property
    def failed(self) -> bool:
        """Whether it exited on an error (not done, paused or stopped)."""
        return self.code not in QUIET_EXITS

    def line(self) -> str:
        """One line for people: ``runner of demo/scripted ended (done)``, or its failure."""
        who = f"runner of {self.run}/{self.target}"
        if self.failed:
            return f"{who} exited {self.code}: {self.last_line}"
        return f"{who} ended ({QUIET_EXITS[self.code]})"


@dataclass(frozen=True, slots=True)
class CreateRequest:
    """What the create form collects."""

    name: str
    targets: tuple[Target, ...]
    tasks: tuple[str, ...]
    """Task ids; empty means all tasks."""
    backend: str
    daily_budget_usd: float | None
    cost_cap_usd: float | None
    """Reserved per LLM task in the day's ledger (the API requires it with a budget)."""


class ManagedSource(Protocol):
    """Blocking operations on the managed runs of one results root (call them off the loop)."""

    results_root: Path

    def list_runs(self) -> list[RunStatus]:
        """Every managed run, by name; unreadable ones are left out."""
        ...

    def status(self, name: str) -> RunStatus:
        """One run's snapshot. Raises ``LookupError`` if it does not exist."""
        ...

    def create(self, request: CreateRequest) -> RunStatus:
        """Creates a run. Raises ``ValueError`` (a ``UsageError``) saying what is wrong."""
        ...

    def add_target(self, name: str, target: Target) -> None:
        """Appends a target to the queue."""
        ...

    def remove_target(self, name: str, target: str) -> None:
        """Removes a target from the queue (its artefacts stay)."""
        ...

    def start(self, name: str, target: str) -> int:
        """Starts the runner for one target, detached in its own process group; its pid."""
        ...

    def ended_launches(self) -> list[EndedLaunch]:
        """The runners started by :meth:`start` that have exited since the last call (each is
        reported once, to whichever screen asks first; asking also reaps them)."""
        ...

    def pause(self, name: str) -> None:
        """Sets ``PAUSE``: the runner stops after the current task."""
        ...

    def stop(self, name: str) -> None:
        """Ends the runner and its in-flight run now."""
        ...

    def clear_pause(self, name: str) -> None:
        """Removes ``PAUSE``."""
        ...

    def summarize(self, name: str) -> Sequence[Path]:
        """Rebuilds the summaries; the files written."""
        ...

    def export_queue(self, name: str) -> Sequence[Path]:
        """Writes ``command.sh`` / ``command.ps1``; the files written."""
        ...

    def delete_target_artifacts(self, name: str, target: str) -> None:
        """Deletes a target's checkpoint, logs and results folders."""
        ...

    def delete(self, name: str) -> None:
        """Deletes the whole managed run."""
        ...


__all__ = ["QUIET_EXITS", "CreateRequest", "EndedLaunch", "ManagedSource", "RunStatus"]
