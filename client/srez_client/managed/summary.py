"""Summaries of a managed run, aggregated from the checkpoints: pure, no I/O.

Scores count ``completed`` tasks only (the latest attempt of each task). Provider errors are
never scores: they are counted apart and retried (only attested ones: a custom agent's claim is
the agent's failure, scored, and counted in ``provider_claims``). Every attempt is counted in
``attempts``; those beyond a task's first are its ``reruns``. ``resolved@1`` is the share of completed tasks
resolved by their single counted attempt, by task difficulty. The reward's error bar is the
standard error of the mean (sample standard deviation / sqrt(n)).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

from pydantic import BaseModel, ConfigDict

from srez_client.managed.models import Checkpoint, ManagedFile, ManagedRun, Target
from srez_client.managed.plan import target_state
from srez_client.results.bootstrap import Interval, group_intervals
from srez_client.results.report import Comparison, compare_rewards
from srez_core.field_docs import field_docstrings

DIFFICULTY_ORDER: Final = ("easy", "medium", "hard")
"""How difficulties are ordered in tables and charts (others follow, sorted)."""

_FROZEN = ConfigDict(frozen=True, extra="forbid", json_schema_extra=field_docstrings)


class DifficultyScore(BaseModel):
    """resolved@1 over the completed tasks of one difficulty."""

    model_config = _FROZEN

    completed: int
    """Completed tasks of that difficulty."""
    resolved: int
    """Of those, resolved."""
    rate: float | None
    """resolved / completed (None when nothing completed)."""
    ci: Interval | None = None
    """The 95 % interval of ``rate`` (None when nothing completed)."""


class TargetSummary(ManagedFile):
    """``targets/<target>/summary.json``."""

    target: str
    agent: str
    model: str
    baseline: bool
    """Whether the target is a baseline (no model)."""
    state: str
    """``pending``, ``partial`` or ``done``."""
    tasks_total: int
    completed: int
    remaining: int
    """Tasks still to run (no record, interrupted, provider error)."""
    interrupted: int
    provider_errors: int
    """Tasks whose latest attempt ended on a provider error (retried on resume)."""
    provider_error_attempts: int
    """Attempts, over all tasks, that ended on a provider error."""
    agent_errors: int
    """Completed tasks whose agent failed (counted: that is the agent's result)."""
    harness_errors: int
    """Tasks that ``failed`` (the harness; not counted)."""
    attempts: int
    """Attempts made, all tasks."""
    reruns: int = 0
    """Attempts beyond each task's first: re-runs after a provider error, an interruption, a
    harness failure (``--retry-failed``) or an unverifiable result. Every attempt stays in
    ``output.json`` (``previous``)."""
    provider_claims: int = 0
    """Attempts whose agent claimed a provider (or harness) failure the harness did not attest:
    counted as the agent's failures, never re-run."""
    mean_reward: float | None
    reward_stderr: float | None
    resolved_rate: float | None
    passed_rate: float | None
    reward_ci: Interval | None = None
    """The 95 % interval of ``mean_reward`` (None when nothing completed)."""
    resolved_ci: Interval | None = None
    """The 95 % interval of ``resolved_rate``."""
    passed_ci: Interval | None = None
    """The 95 % interval of ``passed_rate``."""
    resolved_by_difficulty: dict[str, DifficultyScore]
    cost_usd: float
    """Spent by all attempts."""
    provenance: dict[str, object] | None = None
    """What the completed tasks were scored on (``srez_client.results.provenance``: task sets,
    srez versions, grade version, tasks digest), from their runs' ``summary.json``; None in a
    summary written before this was recorded."""


class CombinedSummary(ManagedFile):
    """The combined ``summary.json`` of a managed run."""

    name: str
    backend: str
    tasks: int
    targets: list[TargetSummary]
    difficulties: list[str]
    """The difficulties present, in display order."""
    reruns: int = 0
    """Re-runs over all targets (each target's ``reruns``)."""
    comparisons: list[Comparison] = []
    """Each target against the next one down by mean reward, on the tasks both completed."""
    provenance: dict[str, object] | None = None
    """What every target's completed tasks were scored on, together (as a target's)."""
    provenance_note: str | None = None
    """One line: the provenance, or why the targets' scores do not compare (another release,
    grade version or task content): then the comparisons are not to be trusted."""


def _mean_stderr(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(var / len(values))


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def target_summary(
    run: ManagedRun, target: Target, checkpoint: Checkpoint, difficulty: Mapping[str, str]
) -> TargetSummary:
    """Aggregate one target's checkpoint (``difficulty``: task id → difficulty)."""
    latest = [r for t, r in checkpoint.tasks.items() if t in run.tasks]
    done = [r for r in latest if r.status == "completed"]
    rewards = [r.reward or 0.0 for r in done]
    mean, stderr = _mean_stderr(rewards)
    by_diff: dict[str, list[bool]] = {}
    for r in done:
        by_diff.setdefault(difficulty.get(r.task_id, "unknown"), []).append(bool(r.resolved))
    ci = group_intervals([[(r.reward or 0.0, bool(r.resolved), bool(r.passed))] for r in done])
    attempts = [a for r in checkpoint.tasks.values() for a in r.attempts()]
    return TargetSummary(
        target=target.name,
        agent=target.agent,
        model=target.model,
        baseline=not target.is_llm,
        state=target_state(run, checkpoint),
        tasks_total=len(run.tasks),
        completed=len(done),
        remaining=len(run.tasks) - len(done) - sum(r.status == "failed" for r in latest),
        interrupted=sum(r.status == "interrupted" for r in latest),
        provider_errors=sum(r.status == "provider_error" for r in latest),
        provider_error_attempts=sum(a.status == "provider_error" for a in attempts),
        agent_errors=sum(r.error_kind == "agent" for r in done),
        harness_errors=sum(r.status == "failed" for r in latest),
        attempts=len(attempts),
        reruns=len(attempts) - len(checkpoint.tasks),
        provider_claims=sum(a.claimed_error_kind is not None for a in attempts),
        mean_reward=mean,
        reward_stderr=stderr,
        resolved_rate=_rate(sum(bool(r.resolved) for r in done), len(done)),
        passed_rate=_rate(sum(bool(r.passed) for r in done), len(done)),
        reward_ci=ci.get("mean_reward"),
        resolved_ci=ci.get("resolved_at_1"),
        passed_ci=ci.get("passed_at_1"),
        resolved_by_difficulty={
            d: DifficultyScore(
                completed=len(v), resolved=sum(v), rate=_rate(sum(v), len(v)), ci=_share_ci(v)
            )
            for d, v in sorted(by_diff.items(), key=lambda kv: difficulty_rank(kv[0]))
        },
        cost_usd=round(sum(a.cost_usd for a in attempts), 6),
    )


def completed_rewards(run: ManagedRun, checkpoint: Checkpoint) -> dict[str, list[float]]:
    """Task id → the reward of its counted attempt, for the completed tasks of the run."""
    return {
        t: [r.reward or 0.0]
        for t, r in checkpoint.tasks.items()
        if t in run.tasks and r.status == "completed"
    }


def _share_ci(resolved: list[bool]) -> Interval | None:
    """The interval of the share of ``resolved`` (one entry per task) that is True."""
    return group_intervals([[(0.0, v, v)] for v in resolved]).get("resolved_at_1")


def difficulty_rank(name: str) -> tuple[int, str]:
    """Sort key: easy, medium, hard, then the others by name."""
    if name in DIFFICULTY_ORDER:
        return DIFFICULTY_ORDER.index(name), ""
    return len(DIFFICULTY_ORDER), name


def comparisons(
    summaries: list[TargetSummary], rewards: Mapping[str, Mapping[str, list[float]]]
) -> list[Comparison]:
    """Each target that completed a task against the next one down by mean reward
    (``rewards``: target → :func:`completed_rewards`); a pair with no common task is left out."""
    ranked = sorted(
        (s for s in summaries if s.mean_reward is not None and rewards.get(s.target)),
        key=lambda s: (-(s.mean_reward or 0.0), s.target),
    )
    out: list[Comparison] = []
    for upper, lower in zip(ranked, ranked[1:], strict=False):
        found = compare_rewards(
            upper.target, rewards[upper.target], lower.target, rewards[lower.target]
        )
        if found is not None:
            out.append(found)
    return out


def combine(
    run: ManagedRun,
    summaries: list[TargetSummary],
    rewards: Mapping[str, Mapping[str, list[float]]] | None = None,
) -> CombinedSummary:
    """The combined summary: baselines first, then models, each in queue order; with
    ``rewards`` (target → :func:`completed_rewards`), the comparisons of the ranked targets."""
    ordered = [s for s in summaries if s.baseline] + [s for s in summaries if not s.baseline]
    diffs = {d for s in summaries for d in s.resolved_by_difficulty}
    return CombinedSummary(
        name=run.name,
        backend=run.backend,
        tasks=len(run.tasks),
        targets=ordered,
        difficulties=sorted(diffs, key=difficulty_rank),
        reruns=sum(s.reruns for s in summaries),
        comparisons=comparisons(summaries, rewards) if rewards is not None else [],
    )
