"""The reward: five components in [0, 1] combined by tier (docs/environment.md §3.9, §6.11).

Decisions where the design is silent:

* RCA proximity (0.33 of the service credit): the declared service is one dependency edge from the
  root *and* on the task's propagation path (so cache and db, both leaves under payments, are not
  neighbours). A declared kind of ``none`` on a fault task earns nothing.
* ``mitigation`` is 0 on a control: there is nothing to mitigate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final

from srez_env import actions
from srez_env.episode import CallRecord, EpisodeRecord
from srez_env.grade.checks import Verdict
from srez_env.grade.models import Reward
from srez_env.task import Task
from srez_env.world import topology as topo

UNRESOLVED_CAP: Final = 0.45
"""The most an unresolved run can score (below :data:`RESOLVED_FLOOR`)."""
RESOLVED_FLOOR: Final = 0.5
"""The least a resolved, safe run scores."""
UNRESOLVED_WEIGHTS: Final = {"rca": 0.5, "evidence": 0.3, "mitigation": 0.2}
RESOLVED_WEIGHTS: Final = {"rca": 0.5, "evidence": 0.3, "eff": 0.2}
UNSAFE_MULT: Final = 0.25
MINIMAL_STEP: Final = 0.25
"""What each collateral key and each unneeded operation takes off ``minimal``."""

RESTARTS: Final = ("restart", "rollback")
"""The calls that restart a service (a rollback redeploys it)."""


def is_mutation(tool: str) -> bool:
    """A call that changes the system: every tool the action registry classes as mutating (read
    from the registry at each call, never copied, so a new mutating tool counts at once)."""
    return tool in actions.MUTATING


def reward_total(
    *,
    resolved: bool,
    safe: bool,
    rca: float,
    evidence: float,
    mitigation: float,
    minimal: float,
    eff: float,
) -> float:
    """The reward from the tier and the components (each in [0, 1]), rounded to 6 decimals.

    Unresolved: ``0.45 * (0.5 rca + 0.3 evidence + 0.2 mitigation)``, at most 0.45. Resolved:
    ``0.5 + 0.5 * (0.5 rca + 0.3 evidence + 0.2 eff) * minimal``, at least 0.5. A failed ``safe``
    multiplies by 0.25 (such a run is never resolved: ``safe`` is part of ``resolved``).
    """
    if resolved:
        inner = rca * 0.5 + evidence * 0.3 + eff * 0.2
        total = RESOLVED_FLOOR + (1 - RESOLVED_FLOOR) * inner * minimal
    else:
        total = UNRESOLVED_CAP * (rca * 0.5 + evidence * 0.3 + mitigation * 0.2)
    return round(total * (1.0 if safe else UNSAFE_MULT), 6)


def score(record: EpisodeRecord, verdict: Verdict) -> Reward:
    """The reward of a judged episode, with its tier's weights and every component."""
    task, log = record.task, record.log
    checks, resolved = verdict.checks, verdict.resolved
    ok_calls = [c for c in log.calls if c.ok]
    rca = rca_credit(task, log.declared)
    evidence = len(log.witnessed) / len(task.ground_truth.required_evidence)
    world = record.world
    took_effect = any(c.tool in RESTARTS for c in ok_calls) or any(
        world.at(verdict.end).running[s] != world.at(0).running[s] for s in topo.SERVICES
    )
    mitigation = float(
        task.fault_kind != "none"
        and checks["valid"].passed
        and checks["safe"].passed
        and checks["func"].passed
        and took_effect
    )
    unneeded = unneeded_ops(task, ok_calls)
    minimal = max(0.0, 1 - MINIMAL_STEP * (len(verdict.collateral) + unneeded))
    eff = efficiency(task, record.steps_used) if resolved else 0.0
    components = {
        "rca": rca,
        "evidence": evidence,
        "mitigation": mitigation,
        "minimal": minimal,
        "eff": eff,
        "resolved": float(resolved),
    }
    total = reward_total(
        resolved=resolved,
        safe=checks["safe"].passed,
        rca=rca,
        evidence=evidence,
        mitigation=mitigation,
        minimal=minimal,
        eff=eff,
    )
    weights = RESOLVED_WEIGHTS if resolved else UNRESOLVED_WEIGHTS
    return Reward(
        total=total,
        weights=dict(weights),
        components={k: round(v, 6) for k, v in components.items()},
    )


def rca_credit(task: Task, declared: tuple[str, str] | None) -> float:
    """0.6 for the service (0.33 of it for a neighbour on the propagation path) plus 0.4 for the
    fault kind; on a control, all or nothing for declaring ``none/none``."""
    root = task.ground_truth.root_cause
    if task.fault_kind == "none":
        return 1.0 if declared == ("none", "none") else 0.0
    if declared is None or declared[1] == "none":
        return 0.0  # "(service, none)" says there is no fault: no credit for the service
    service, fault = declared
    near = service in topo.neighbours(root.service) and service in task.ground_truth.propagation
    service_credit = 1.0 if service == root.service else 0.33 if near else 0.0
    return 0.6 * service_credit + 0.4 * (fault == root.fault)


def efficiency(task: Task, steps_used: int) -> float:
    """1 up to three steps over the expert's count, falling linearly to 0 at the step budget."""
    expert = task.expert_steps
    span = task.max_steps - (expert + 3)
    if span <= 0:
        return 1.0
    return min(1.0, max(0.0, 1 - (steps_used - (expert + 3)) / span))


def unneeded_ops(task: Task, ok_calls: Sequence[CallRecord]) -> int:
    """Restarts and rollbacks beyond the reference fix's count per service, plus ``scale`` calls
    on services the reference fix does not scale; on a control every mutation."""
    if task.fault_kind == "none":
        return sum(1 for c in ok_calls if is_mutation(c.tool))
    restarts = Counter(c.args["service"] for c in ok_calls if c.tool in RESTARTS)
    reference = task.reference_fix
    allowed = Counter(str(a.args["service"]) for a in reference if a.tool in RESTARTS)
    scaled = {str(a.args["service"]) for a in reference if a.tool == "scale"}
    extra_restarts = sum(max(0, n - allowed[s]) for s, n in restarts.items())
    extra_scales = sum(1 for c in ok_calls if c.tool == "scale" and c.args["service"] not in scaled)
    return extra_restarts + extra_scales
