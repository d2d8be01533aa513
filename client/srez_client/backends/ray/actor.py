"""The run registry: one Ray actor that knows the runs in flight on the cluster.

Each attempt of a run reports to it (:mod:`.task`): which node took it, its phase and steps, and
the dialog lines it appended since the last report; the launcher and the commands read it
(``srez runs list --backend ray`` lists its runs, ``srez attach RUN`` follows a run's dialog
through it, ``srez runs stop`` asks it to stop a run). Nothing of a run is reached over the
network but through Ray itself: the daemons listen on their node's loopback only.

:class:`RunRegistry` is a plain class (so it is tested without Ray); :func:`registry_actor`
makes it the cluster's actor named :data:`ACTOR_NAME` (detached: it outlives the command that
made it, so another command on the same cluster sees the same runs), or finds it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

ACTOR_NAME: Final = "srez-run-registry"
"""The actor's name in its namespace."""
HEAD_RESOURCE: Final = "node:__internal_head__"
"""The resource only the head node has."""
MAX_LINES: Final = 20_000
"""Dialog lines kept per run; older ones are dropped (a follower starting later misses them)."""
SILENCE_S: Final = 10.0
"""A started run whose node has not reported for this long is not in flight any more (a node
reports every ``poll_s``, 0.2 s by default)."""
QUEUED_SILENCE_S: Final = 120.0
"""The same for a run no node took yet (it may wait for a free CPU)."""
TERMINAL: Final = frozenset({"done", "error", "returned", "failed"})
"""Phases after which a run's attempt reports no more."""


class RegisteredRun(BaseModel):
    """A run as the registry knows it (what ``srez runs list`` shows of a run in flight)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    labels: dict[str, str]
    phase: str = "queued"
    """``queued`` (no node took it yet), the daemon's phase (``starting``, ``agent`` ...),
    ``returned`` (its folder came back), ``failed`` (every attempt failed)."""
    node: str = ""
    """The node of the latest attempt."""
    attempt: str = ""
    """The latest attempt's id."""
    attempts: tuple[tuple[str, str, str], ...] = ()
    """Every attempt that started: (attempt id, node id, started at)."""
    steps: int = 0
    seen: float = 0.0
    """When it last heard of the run (the actor's monotonic clock)."""
    stop: bool = False
    """A stop was asked for; the attempt stops its run at its next report."""


@dataclass(slots=True)
class _Lines:
    attempt: str = ""
    first: int = 0
    """Index of ``lines[0]`` among the attempt's lines."""
    lines: list[str] = field(default_factory=list)


class RunRegistry:
    """The registry's state and methods (the actor's class)."""

    def __init__(self) -> None:
        self._runs: dict[str, RegisteredRun] = {}
        self._lines: dict[str, _Lines] = {}

    def register(self, run_id: str, labels: dict[str, str]) -> None:
        """A run was submitted (idempotent)."""
        if run_id not in self._runs:
            self._runs[run_id] = RegisteredRun(run_id=run_id, labels=labels, seen=_now())
            self._lines[run_id] = _Lines()

    def attempt_started(self, run_id: str, attempt: str, node: str, started_at: str) -> bool:
        """An attempt of ``run_id`` started on ``node``; its lines replace the last one's.

        Returns:
            Whether the run is still wanted (False: stopped or forgotten, do not run it).
        """
        run = self._runs.get(run_id)
        if run is None:
            return False
        self._runs[run_id] = run.model_copy(
            update={
                "phase": "starting",
                "node": node,
                "attempt": attempt,
                "attempts": (*run.attempts, (attempt, node, started_at)),
                "steps": 0,
                "seen": _now(),
            }
        )
        self._lines[run_id] = _Lines(attempt=attempt)
        return not run.stop

    def report(self, run_id: str, attempt: str, phase: str, steps: int, lines: list[str]) -> bool:
        """The attempt's phase, steps and new dialog lines.

        Returns:
            Whether the run should stop (a stop was asked for, or the run is forgotten).
        """
        run = self._runs.get(run_id)
        if run is None:
            return True
        if run.attempt != attempt:  # a stale attempt (its node was given up): not the run's
            return True
        steps = run.steps if steps < 0 else steps  # -1: unchanged
        self._runs[run_id] = run.model_copy(update={"phase": phase, "steps": steps, "seen": _now()})
        kept = self._lines[run_id]
        kept.lines.extend(lines)
        if len(kept.lines) > MAX_LINES:
            drop = len(kept.lines) - MAX_LINES
            del kept.lines[:drop]
            kept.first += drop
        return run.stop

    def finish(self, run_id: str, phase: str) -> None:
        """The launcher got the run back (``returned``) or gave up on it (``failed``)."""
        run = self._runs.get(run_id)
        if run is not None:
            self._runs[run_id] = run.model_copy(update={"phase": phase})

    def request_stop(self, run_id: str) -> None:
        """Ask the run's attempt to stop its run (it writes its summary and returns)."""
        run = self._runs.get(run_id)
        if run is not None:
            self._runs[run_id] = run.model_copy(update={"stop": True})

    def forget(self, run_id: str) -> None:
        """Drop the run (idempotent)."""
        self._runs.pop(run_id, None)
        self._lines.pop(run_id, None)

    def attempts(self, run_id: str) -> list[tuple[str, str, str]]:
        """Every attempt of the run that started: (attempt id, node id, started at)."""
        run = self._runs.get(run_id)
        return [] if run is None else list(run.attempts)

    def runs(self) -> list[dict[str, Any]]:
        """Every run it knows, in submission order (plain values: they cross processes), with
        ``age_s``: how long since it last heard of the run."""
        now = _now()
        return [{**run.model_dump(), "age_s": now - run.seen} for run in self._runs.values()]

    def lines(self, run_id: str, attempt: str, index: int) -> tuple[str, int, list[str], str]:
        """The dialog lines of the run's latest attempt from line ``index`` of ``attempt``.

        Returns:
            (the latest attempt, the index of the first line returned, the lines, the phase);
            a new attempt restarts at index 0.
        """
        run = self._runs.get(run_id)
        kept = self._lines.get(run_id)
        if run is None or kept is None:
            return ("", 0, [], "forgotten")
        start = index if kept.attempt == attempt else 0
        start = max(start, kept.first)
        return (kept.attempt, start, kept.lines[start - kept.first :], run.phase)


def _now() -> float:
    return time.monotonic()


def in_flight(run: dict[str, Any]) -> bool:
    """Whether a run the registry lists is still in flight: not ended, and heard of lately (a run
    whose launcher died is never heard of again; its task ended with it)."""
    silence = QUEUED_SILENCE_S if run["phase"] == "queued" else SILENCE_S
    return run["phase"] not in TERMINAL and run["age_s"] < silence


def registry_actor(ray: Any, namespace: str) -> Any:
    """The cluster's registry actor in ``namespace``, made if there is none: detached, on the head
    node (worker nodes come and go), using no CPU."""
    actor_class = ray.remote(num_cpus=0, resources={HEAD_RESOURCE: 0.001})(RunRegistry)
    return actor_class.options(
        name=ACTOR_NAME, namespace=namespace, lifetime="detached", get_if_exists=True
    ).remote()
