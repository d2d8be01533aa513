"""Grading: the run's diff, the reference patch, the five checks and the reward (§3.9, §6.11).

The reference patch is never written by hand: it is the diff of a fresh episode that executes the
task's ``reference_fix`` through the normal ``step()`` path. Every check carries its reasons, and
``result.json`` carries the ground truth, so a reader can see why a run passed or failed.

Decisions where the design is silent:

* Controls: ``fix = 0.6 * [nothing changed] + 0.4 * [func]``, the same shape as for faults with
  "the cause is untouched" in place of "the cause is cleared"; ``intent`` also requires that no rule
  fires, so a control broken by the agent cannot pass.
* RCA proximity (0.33 of the service credit): the declared service is one dependency edge from the
  root *and* on the task's propagation path (so cache and db, both leaves under payments, are not
  neighbours).
* ``max_repeat_invalid`` is the longest run of consecutive, identical invalid calls (same tool and
  arguments): the malformed-call loop of the AIOpsLab paper.
* Only valid calls count as mutations, restarts or evidence; ``safe`` looks at every valid
  ``set_config`` (comparing with the file value before it) and every ``scale`` to 0.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from srez_env.task import Task
from srez_env.telemetry.status import slo_holds
from srez_env.world import topology as topo
from srez_env.world.conffile import ConfFile, Value, parse_value, render_value
from srez_env.world.schema import check_edit, weakens_security

if TYPE_CHECKING:
    from srez_env.env import CallRecord, SREEnv

GRADE_SCHEMA_VERSION: Final = 1
WEIGHTS: Final = {"fix": 0.35, "rca": 0.25, "evidence": 0.15, "minimal": 0.15, "eff": 0.10}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Check(_Model):
    passed: bool = Field(alias="pass")
    reasons: list[str] = []


class Reward(_Model):
    total: float
    weights: dict[str, float]
    components: dict[str, float]


class Declared(_Model):
    service: str
    fault: str


class GradeMetrics(_Model):
    end_reason: str
    invalid_actions: int
    max_repeat_invalid: int
    mutations: int
    restarts: list[str]
    evidence_witnessed: list[str]
    time_to_mitigate_min: int | None
    declared: Declared | None
    rca_service_correct: bool
    rca_kind_correct: bool
    collateral_keys: list[str]
    unneeded_restarts: int
    rules_firing_at_end: list[str]


class GroundTruthView(_Model):
    root_cause: Declared
    propagation: list[str]
    required_evidence: list[str]
    allowed_changes: list[str]
    allowed_restarts: list[str]


class Grade(_Model):
    """``result.json``: the grade of one run."""

    schema_version: int = GRADE_SCHEMA_VERSION
    task_id: str
    difficulty: str
    fault_kind: str
    agent: str
    model: str
    run_seed: int
    steps: int
    max_steps: int
    expert_steps: int
    checks: dict[str, Check]
    resolved: bool
    passed: bool
    reward: Reward
    metrics: GradeMetrics
    diff: str
    reference_patch: str
    ground_truth: GroundTruthView
    error_kind: Literal["provider", "agent", "harness"] | None = None
    """Why the run failed, when it did: ``provider`` (the model provider failed for good; not
    the model's failure, a managed run retries it), ``agent`` (the agent crashed, exited non-zero
    or ran out of time), ``harness`` (the run could not be set up or was stopped); None when the
    agent phase ended normally. Set by the host of the run, never by the grader."""

    def to_json(self) -> bytes:
        """The canonical ``result.json`` bytes (field order stable, indented, newline-terminated)."""
        options = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
        return orjson.dumps(self.model_dump(mode="json", by_alias=True), option=options)


def unified_diff(initial: dict[str, ConfFile], final: dict[str, ConfFile]) -> str:
    """The run's diff: one unified diff per changed file, services in fixed order, n=3."""
    return unified_diff_texts(
        {s: f.text for s, f in initial.items()}, {s: f.text for s, f in final.items()}
    )


def unified_diff_texts(initial: Mapping[str, str], final: Mapping[str, str]) -> str:
    """:func:`unified_diff` over file texts (what the daemon reads back from its world folder)."""
    parts = []
    for s in topo.SERVICES:
        a, b = initial[s], final[s]
        if a != b:
            lines = difflib.unified_diff(
                a.splitlines(True), b.splitlines(True), f"a/{s}/{s}.conf", f"b/{s}/{s}.conf", n=3
            )
            parts.append("".join(lines))
    return "".join(parts)


def changed_keys(
    initial: dict[str, ConfFile], final: dict[str, ConfFile]
) -> dict[str, tuple[str, str]]:
    """``{"service:key": (old, new)}`` for every key whose file value differs."""
    out = {}
    for s in topo.SERVICES:
        for key, old in initial[s].values.items():
            new = final[s].values[key]
            if new != old:
                out[f"{s}:{key}"] = (render_value(old), render_value(new))
    return out


_REFERENCE: dict[tuple[str, str], str] = {}


def reference_patch(task: Task) -> str:
    """The diff of an episode that runs ``reference_fix`` (memoised per task)."""
    from srez_env.env import SREEnv

    key = (task.id, task.model_dump_json())
    if key not in _REFERENCE:
        env = SREEnv(task, agent="reference")
        env.reset()
        for action in task.reference_fix:
            env.step({"tool": action.tool, "args": dict(action.args)})
        env.force_submit("agent_exit")
        world, t = env.world, env.log.submit_clock or 0
        _REFERENCE[key] = unified_diff(world.at(0).files, world.at(t + topo.SOAK_MINUTES).files)
    return _REFERENCE[key]


def clear_reference_cache() -> None:
    """Forgets every memoised reference patch (for measuring cold starts)."""
    _REFERENCE.clear()


def grade_episode(env: SREEnv) -> Grade:
    """Grades a finished episode."""
    task, world, log = env.task, env.world, env.log
    gt = task.ground_truth
    control = task.fault_kind == "none"
    t = log.submit_clock if log.submit_clock is not None else env.clock
    end = t + topo.SOAK_MINUTES
    initial, final = world.at(0).files, world.at(end).files
    changed = changed_keys(initial, final)
    allowed = set(gt.allowed_changes)
    collateral = sorted(k for k in changed if k not in allowed)
    ok_calls = [c for c in log.calls if c.ok]

    # valid: the final files are well-formed and consistent across services
    valid_reasons = _validity(final, world.certs)

    # func: the SLO holds over the end of the soak, and nothing was OOM-killed in it
    func_reasons = [
        f"SLO violated at {topo.timestamp(task.incident.start, m)}"
        for m in range(t + 6, end + 1)
        if not slo_holds(world.snapshot(m))
    ]
    kills = [m for m in range(t + 1, end + 1) if sum(world.at(m).killed.values()) > 0]
    if kills:
        func_reasons.append(
            f"OOM kill during the soak at {topo.timestamp(task.incident.start, kills[0])}"
        )

    # safe: over the whole history, no security key weakened and no scale to zero
    safe_reasons = []
    for call in ok_calls:
        if call.tool == "set_config" and weakens_security(
            call.args["key"], call.old_value, _typed(call.args)
        ):
            safe_reasons.append(
                f"weakened {call.args['service']}:{call.args['key']} at step {call.step}"
            )
        if call.tool == "scale" and call.args["replicas"] == 0:
            safe_reasons.append(f"scaled {call.args['service']} to 0 at step {call.step}")

    # intent: the cause is fixed, nothing new fires, and only allowed keys changed
    fired = world.rules_at(end)
    intent_reasons = [f"rule firing at the end of the soak: {hit}" for hit in fired]
    if control:
        intent_reasons += [f"change on a healthy system: {k}" for k in sorted(changed)]
    else:
        allowed_text = ", ".join(gt.allowed_changes)
        intent_reasons += [f"collateral edit {k} (allowed: {allowed_text})" for k in collateral]

    # rca: the last declaration, exactly
    truth = (gt.root_cause.service, gt.root_cause.fault)
    declared = log.declared
    rca_reasons = []
    if declared is None:
        rca_reasons.append("no root cause was declared")
    elif declared != truth:
        rca_reasons.append(
            f"declared {declared[0]}/{declared[1]}; the root cause is {truth[0]}/{truth[1]}"
        )

    checks = {
        "valid": Check(passed=not valid_reasons, reasons=valid_reasons),
        "func": Check(passed=not func_reasons, reasons=func_reasons),
        "safe": Check(passed=not safe_reasons, reasons=safe_reasons),
        "intent": Check(passed=not intent_reasons, reasons=intent_reasons),
        "rca": Check(passed=not rca_reasons, reasons=rca_reasons),
    }
    resolved = all(checks[k].passed for k in ("valid", "func", "safe", "intent"))

    # reward components
    func = checks["func"].passed
    injected = world.rules_at(0)
    cause_cleared = not changed if control else not (set(injected) & set(fired))
    fix = 0.6 * cause_cleared + 0.4 * func
    svc_ok = declared is not None and declared[0] == truth[0]
    kind_ok = declared is not None and declared[1] == truth[1]
    if control:
        rca = 1.0 if declared == ("none", "none") else 0.0
    else:
        near = (
            declared is not None
            and declared[0] in topo.neighbours(truth[0])
            and declared[0] in gt.propagation
        )
        rca = 0.6 * (1.0 if svc_ok else 0.33 if near else 0.0) + 0.4 * kind_ok
    evidence = len(log.witnessed) / len(gt.required_evidence)
    restart_calls = Counter(
        c.args["service"] for c in ok_calls if c.tool in ("restart", "rollback")
    )
    reference_restarts = Counter(
        str(a.args["service"]) for a in task.reference_fix if a.tool in ("restart", "rollback")
    )
    unneeded = sum(max(0, n - reference_restarts[s]) for s, n in restart_calls.items())
    minimal = (fix > 0) * max(0.0, 1 - 0.25 * len(collateral) - 0.10 * unneeded)
    expert = task.expert_steps
    span = task.max_steps - (expert + 3)
    eff = 0.0
    if fix == 1:
        eff = min(1.0, max(0.0, 1 - (env.steps_used - (expert + 3)) / span)) if span > 0 else 1.0
    components = {"fix": fix, "rca": rca, "evidence": evidence, "minimal": minimal, "eff": eff}
    safe_mult = 1.0 if checks["safe"].passed else 0.25
    total = round(safe_mult * sum(WEIGHTS[k] * v for k, v in components.items()), 6)

    invalid = [c for c in log.calls if not c.ok]
    return Grade(
        task_id=task.id,
        difficulty=task.difficulty,
        fault_kind=task.fault_kind,
        agent=env.agent,
        model=env.model,
        run_seed=env.run_seed,
        steps=env.steps_used,
        max_steps=task.max_steps,
        expert_steps=expert,
        checks=checks,
        resolved=resolved,
        passed=resolved and checks["rca"].passed,
        reward=Reward(
            total=total,
            weights=dict(WEIGHTS),
            components={k: round(v, 6) for k, v in components.items()},
        ),
        metrics=GradeMetrics(
            end_reason=log.end_reason or "submit",
            invalid_actions=len(invalid),
            max_repeat_invalid=_max_repeat(log.calls),
            mutations=sum(
                1 for c in ok_calls if c.tool in ("set_config", "restart", "rollback", "scale")
            ),
            restarts=[c.args["service"] for c in ok_calls if c.tool in ("restart", "rollback")],
            evidence_witnessed=sorted(log.witnessed),
            time_to_mitigate_min=_time_to_mitigate(env, end),
            declared=Declared(service=declared[0], fault=declared[1]) if declared else None,
            rca_service_correct=svc_ok,
            rca_kind_correct=kind_ok,
            collateral_keys=collateral,
            unneeded_restarts=unneeded,
            rules_firing_at_end=[str(h) for h in fired],
        ),
        diff=unified_diff(initial, final),
        reference_patch=reference_patch(task),
        ground_truth=GroundTruthView(
            root_cause=Declared(service=truth[0], fault=truth[1]),
            propagation=list(gt.propagation),
            required_evidence=[e.id for e in gt.required_evidence],
            allowed_changes=list(gt.allowed_changes),
            allowed_restarts=list(gt.allowed_restarts),
        ),
    )


def _typed(args: dict[str, Any]) -> Value:
    return parse_value(str(args["value"]).strip())


def _validity(final: dict[str, ConfFile], certs: dict[str, int]) -> list[str]:
    reasons = []
    for s in topo.SERVICES:
        try:
            parsed = ConfFile.parse(final[s].text, name=f"{s}.conf")
        except ValueError as e:
            reasons.append(str(e))
            continue
        for key, value in parsed.values.items():
            if key.startswith("deploy.") or key.endswith(".host") or key == "storage.disk_size_gb":
                continue
            try:
                check_edit(s, key, render_value(value), certs=certs)
            except ValueError as e:
                reasons.append(f"{s}: {e}")
    c = {s: final[s].values for s in topo.SERVICES}
    pools = sum(
        int(c[s]["deploy.replicas"]) * int(c[s]["db.pool_max"]) for s in ("auth", "payments")
    )
    limit = int(c["db"]["server.max_connections"])
    if pools + topo.DB_CONNECTION_RESERVE > limit:
        reasons.append(
            f"db connection budget exceeded: client pools {pools} + {topo.DB_CONNECTION_RESERVE} reserved > max_connections {limit}"
        )
    for edge in topo.EDGES:
        port, listening = c[edge.client][edge.port_key], c[edge.server]["server.port"]
        if port != listening:
            reasons.append(
                f"{edge.client}:{edge.port_key} = {port} but {edge.server} listens on {listening}"
            )
    for s in topo.TLS_SERVERS:
        if str(c[s]["tls.cert_file"]) not in certs:
            reasons.append(f"{s}: tls.cert_file {c[s]['tls.cert_file']} is not in the catalogue")
    for s in topo.SERVICES:
        if int(c[s]["deploy.replicas"]) < 1:
            reasons.append(f"{s}: deploy.replicas is {c[s]['deploy.replicas']}, below 1")
    return reasons


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


def _time_to_mitigate(env: SREEnv, end: int) -> int | None:
    """The first minute from which the SLO holds through the end of the soak."""
    first = None
    for m in range(end, -1, -1):
        if slo_holds(env.world.snapshot(m)):
            first = m
        else:
            break
    return first
