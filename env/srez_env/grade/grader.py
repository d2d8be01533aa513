"""Grading a finished episode: the five checks, the reward and the run's metrics (§3.9, §6.11,
§6.15).

The grader reads an :class:`~srez_env.episode.EpisodeRecord` and nothing else of the environment.
Only valid calls count as mutations, restarts or evidence; ``max_repeat_invalid`` is the longest
run of consecutive, identical invalid calls (same tool and arguments): the malformed-call loop of
the AIOpsLab paper.
"""

from __future__ import annotations

from collections.abc import Sequence

from srez_env.episode import CallRecord, EpisodeRecord
from srez_env.errors import EpisodeError
from srez_env.grade.checks import Verdict, judge
from srez_env.grade.models import Declared, Grade, GradeMetrics, GroundTruthView
from srez_env.grade.patch import reference_patch, unified_diff
from srez_env.grade.reward import RESTARTS, is_mutation, score, unneeded_ops
from srez_env.sim.timeline import World
from srez_env.telemetry.status import slo_holds


def grade_episode(record: EpisodeRecord) -> Grade:
    """Grades a finished episode.

    Raises:
        EpisodeError: If the episode has not ended (grade it after submit or force_submit).
    """
    if not record.done:
        msg = "the episode is still running: grade it after submit or force_submit"
        raise EpisodeError(msg)
    task = record.task
    verdict = judge(record)
    reward = score(record, verdict)
    gt = task.ground_truth
    return Grade(
        task_id=task.id,
        difficulty=task.difficulty,
        fault_kind=task.fault_kind,
        agent=record.agent,
        model=record.model,
        run_seed=record.run_seed,
        steps=record.steps_used,
        max_steps=task.max_steps,
        expert_steps=task.expert_steps,
        checks=verdict.checks,
        resolved=verdict.resolved,
        passed=verdict.resolved and verdict.checks["rca"].passed,
        reward=reward,
        metrics=_metrics(record, verdict),
        diff=unified_diff(verdict.initial, verdict.final),
        reference_patch=reference_patch(task),
        ground_truth=GroundTruthView(
            root_cause=Declared(service=gt.root_cause.service, fault=gt.root_cause.fault),
            propagation=list(gt.propagation),
            required_evidence=[e.id for e in gt.required_evidence],
            allowed_changes=list(gt.allowed_changes),
            allowed_restarts=list(gt.allowed_restarts),
        ),
    )


def _metrics(record: EpisodeRecord, verdict: Verdict) -> GradeMetrics:
    log, root = record.log, record.task.ground_truth.root_cause
    ok_calls = [c for c in log.calls if c.ok]
    declared = log.declared
    return GradeMetrics(
        end_reason=log.end_reason or "submit",
        invalid_actions=sum(1 for c in log.calls if not c.ok),
        max_repeat_invalid=_max_repeat(log.calls),
        mutations=sum(1 for c in ok_calls if is_mutation(c.tool)),
        restarts=[c.args["service"] for c in ok_calls if c.tool in RESTARTS],
        evidence_witnessed=sorted(log.witnessed),
        time_to_mitigate_min=_time_to_mitigate(record.world, verdict.end),
        declared=Declared(service=declared[0], fault=declared[1]) if declared else None,
        rca_service_correct=declared is not None and declared[0] == root.service,
        rca_kind_correct=declared is not None and declared[1] == root.fault,
        collateral_keys=verdict.collateral,
        unneeded_ops=unneeded_ops(record.task, ok_calls),
        rules_firing_at_end=[str(h) for h in verdict.fired],
        pending_restarts=verdict.pending,
        rules_firing_after_restarts=[str(h) for h in verdict.fired_later],
    )


def _max_repeat(calls: Sequence[CallRecord]) -> int:
    """The longest run of consecutive identical invalid calls."""
    best = run = 0
    previous: tuple[str, str] | None = None
    for call in calls:
        key = None if call.ok else (call.tool, repr(sorted(call.args.items())))
        run = (run + 1 if key == previous else 1) if key is not None else 0
        best = max(best, run)
        previous = key
    return best


def _time_to_mitigate(world: World, end: int) -> int | None:
    """The first minute from which the SLO holds through the end of the soak."""
    first = None
    for m in range(end, -1, -1):
        if slo_holds(world.snapshot(m)):
            first = m
        else:
            break
    return first
