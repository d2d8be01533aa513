"""Which runs one leaderboard may merge, and the provenance it names. Pure: no I/O.

Two scores compare when the same grade scored them on the same task. So a leaderboard merges
runs only when they agree on:

* the grade's version (``result.json``'s ``schema_version``, bumped whenever a change could
  move any run's checks or reward);
* the release of ``srez`` that ran them (major.minor: a patch release never changes a score,
  and one that could is a new minor release, since the simulator is part of what is measured);
* each task's content: one task id run on two contents (``task_digest``) is two tasks;
* the task set the tasks were chosen from (``task_set_digest``): runs of two sets (a held-out set
  and the canonical one, or two generated sets, whose task ids never meet) are two evaluations,
  not one. A run that recorded no set digest (written before it was recorded) is held to the
  rules above only.

A run whose ``summary.json`` predates provenance (None) merges with nothing that has one: what
ran it is unknown. Runs that were not graded carry no grade version and are not checked for it.

The leaderboard then names what it covers (:class:`LeaderboardProvenance`): each task set
(canonical or generated, with the generator and its seed, or custom), the versions and one
digest over every (task id, task digest) pair, so that two leaderboards on the same digest were
scored on the same tasks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from srez_client.errors import ClientError
from srez_daemon.protocol import Provenance


class IncompatibleResults(ClientError):
    """Runs whose scores do not compare were asked to share one leaderboard."""


@dataclass(frozen=True, slots=True)
class Scored:
    """One run as the check sees it."""

    where: str
    """How a message names the run (``sre-003 heuristic seed 0 in results/...``)."""
    task_id: str
    provenance: Provenance | None


@dataclass(frozen=True, slots=True)
class TaskSetRef:
    """One task set a leaderboard covers."""

    task_set: str
    generator: str | None
    seed: int | None
    tasks: int
    digest: str | None = None
    """The set's digest (``task_set_digest``), None when its runs did not record it."""

    def describe(self) -> str:
        """``canonical (srez-worlds/1, seed 20250314, 40 tasks, set 0123456789abcdef)``."""
        origin = [f"{self.generator}, seed {self.seed}"] if self.generator else []
        named = [f"set {self.digest}"] if self.digest else []
        return f"{self.task_set} ({', '.join([*origin, f'{self.tasks} tasks', *named])})"


@dataclass(frozen=True, slots=True)
class LeaderboardProvenance:
    """What a leaderboard was scored on."""

    task_sets: tuple[TaskSetRef, ...]
    srez_versions: tuple[str, ...]
    grade_version: int | None
    tasks_digest: str | None
    """16 hex digits over the sorted (task id, task digest) pairs; None when unrecorded."""
    recorded: bool = True
    """False when the runs predate provenance (then nothing else is known)."""

    def describe(self) -> str:
        """The one line a table prints above the leaderboard."""
        if not self.recorded:
            return "provenance: not recorded (runs written before srez recorded it)"
        sets = " + ".join(t.describe() for t in self.task_sets) or "no task"
        grade = "-" if self.grade_version is None else f"v{self.grade_version}"
        digest = f" · tasks digest {self.tasks_digest}" if self.tasks_digest else ""
        return f"provenance: {sets} · srez {', '.join(self.srez_versions)} · grade {grade}{digest}"

    def as_json(self) -> dict[str, object]:
        """The ``provenance`` block of ``--json`` and of summaries."""
        return {
            "recorded": self.recorded,
            "task_sets": [
                {
                    "task_set": t.task_set,
                    "generator": t.generator,
                    "seed": t.seed,
                    "tasks": t.tasks,
                    "set_digest": t.digest,
                }
                for t in self.task_sets
            ],
            "srez_versions": list(self.srez_versions),
            "grade_version": self.grade_version,
            "tasks_digest": self.tasks_digest,
        }


def release(version: str) -> str:
    """``major.minor`` of a version (the whole string when it has no dot)."""
    parts = version.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else version


def _lineage(p: Provenance) -> str:
    grade = "ungraded" if p.grade_version is None else f"grade v{p.grade_version}"
    return f"srez {release(p.srez_version)}.x, {grade}"


def check_mergeable(runs: Sequence[Scored]) -> None:
    """Refuse runs that do not compare (see the module docstring).

    Raises:
        IncompatibleResults: naming two runs that disagree, how, and what to do.
    """
    known = [r for r in runs if r.provenance is not None]
    unknown = [r for r in runs if r.provenance is None]
    advice = "evaluate into a fresh --results folder, or rerun them with this srez"
    if known and unknown:
        first, old = known[0], unknown[0]
        msg = f"{old.where} has no provenance (written before srez recorded it) and cannot share a leaderboard with {first.where}; {advice}"
        raise IncompatibleResults(msg)
    graded = [
        (r, r.provenance) for r in known if r.provenance and r.provenance.grade_version is not None
    ]
    for run, p in graded[1:]:
        first, q = graded[0]
        if (release(p.srez_version), p.grade_version) != (release(q.srez_version), q.grade_version):
            msg = f"{run.where} ({_lineage(p)}) and {first.where} ({_lineage(q)}) were scored by different versions: their scores do not compare; {advice}"
            raise IncompatibleResults(msg)
    sets = [(r, r.provenance.task_set_digest) for r in known if r.provenance is not None]
    recorded = [(run, digest) for run, digest in sets if digest is not None]
    for run, digest in recorded[1:]:
        first, theirs = recorded[0]
        if digest != theirs:
            msg = f"{run.where} and {first.where} ran on different task sets (set digests {digest} and {theirs}): their scores do not compare; {advice}"
            raise IncompatibleResults(msg)
    digests: dict[str, Scored] = {}
    for run in known:
        assert run.provenance is not None
        seen = digests.setdefault(run.task_id, run)
        assert seen.provenance is not None
        if seen.provenance.task_digest != run.provenance.task_digest:
            msg = f"{run.where} and {seen.where} ran different contents of task {run.task_id} (digests {run.provenance.task_digest} and {seen.provenance.task_digest}): their scores do not compare; {advice}"
            raise IncompatibleResults(msg)


def leaderboard_provenance(runs: Iterable[Scored]) -> LeaderboardProvenance:
    """What the runs were scored on (check them with :func:`check_mergeable` first)."""
    runs = list(runs)
    if runs and all(r.provenance is None for r in runs):
        return LeaderboardProvenance((), (), None, None, recorded=False)
    tasks: dict[str, Provenance] = {}
    for run in runs:
        if run.provenance is not None:
            tasks.setdefault(run.task_id, run.provenance)
    sets: dict[tuple[str, str | None, int | None, str | None], int] = {}
    for p in tasks.values():
        key = (p.task_set or "unrecorded", p.generator, p.task_set_seed, p.task_set_digest)
        sets[key] = sets.get(key, 0) + 1
    refs = tuple(
        TaskSetRef(s, g, seed, n, digest)
        for (s, g, seed, digest), n in sorted(sets.items(), key=str)
    )
    versions = tuple(sorted({r.provenance.srez_version for r in runs if r.provenance is not None}))
    grades = {
        r.provenance.grade_version
        for r in runs
        if r.provenance is not None and r.provenance.grade_version is not None
    }
    pairs = sorted(f"{t}:{p.task_digest}" for t, p in tasks.items())
    digest = (
        hashlib.sha256("\n".join(pairs).encode()).hexdigest()[:16]
        if pairs and all(p.task_digest for p in tasks.values())
        else None
    )
    return LeaderboardProvenance(refs, versions, min(grades) if grades else None, digest)
