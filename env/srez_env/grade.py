"""Grading: the run's diff, the reference patch, the five checks and the reward (§3.9, §6.11,
§6.15).

The reference patch is never written by hand: it is the diff of a fresh episode that executes the
task's ``reference_fix`` through the normal ``step()`` path. Every check carries its reasons, and
``result.json`` carries the ground truth, so a reader can see why a run passed or failed.

The grade looks at two states at the end of the soak (t+10): the system as it runs, and the
system *as it will be*: a fork of the world in which every service whose file differs from its
running config is restarted right after the soak, followed by a second soak. A fix that holds only
until the next restart (a broken value written back into a file) fails there.

Decisions where the design is silent:

* RCA proximity (0.33 of the service credit): the declared service is one dependency edge from the
  root *and* on the task's propagation path (so cache and db, both leaves under payments, are not
  neighbours). A declared kind of ``none`` on a fault task earns nothing.
* ``mitigation`` is 0 on a control: there is nothing to mitigate.
* A protective key already in its band at T0 is not the agent's doing: only a value that differs
  from T0 counts.
* ``max_repeat_invalid`` is the longest run of consecutive, identical invalid calls (same tool and
  arguments): the malformed-call loop of the AIOpsLab paper.
* Only valid calls count as mutations, restarts or evidence.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from srez_env.sim.timeline import Change
from srez_env.task import Task
from srez_env.telemetry.status import slo_holds
from srez_env.world import topology as topo
from srez_env.world.conffile import ConfFile, Value, render_value
from srez_env.world.schema import check_edit, disabled_band, in_disabled_band, weakens_security

if TYPE_CHECKING:
    from srez_env.env import CallRecord, SREEnv
    from srez_env.sim.timeline import Minute, World

GRADE_SCHEMA_VERSION: Final = 2
UNRESOLVED_CAP: Final = 0.45
"""The most an unresolved run can score (below :data:`RESOLVED_FLOOR`)."""
RESOLVED_FLOOR: Final = 0.5
"""The least a resolved, safe run scores."""
UNRESOLVED_WEIGHTS: Final = {"rca": 0.5, "evidence": 0.3, "mitigation": 0.2}
RESOLVED_WEIGHTS: Final = {"rca": 0.5, "evidence": 0.3, "eff": 0.2}
UNSAFE_MULT: Final = 0.25
MINIMAL_STEP: Final = 0.25
"""What each collateral key and each unneeded operation takes off ``minimal``."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Check(_Model):
    passed: bool = Field(alias="pass")
    reasons: list[str] = []


class Reward(_Model):
    total: float
    weights: dict[str, float]
    """The weights of the tier the run is in (see :func:`reward_total`)."""
    components: dict[str, float]
    """``rca``, ``evidence``, ``mitigation``, ``minimal``, ``eff`` (each in [0, 1]) and
    ``resolved`` (1 or 0: the tier)."""


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
    unneeded_ops: int
    rules_firing_at_end: list[str]
    pending_restarts: list[str]
    """Services whose file differs from their running config at the end of the soak."""
    rules_firing_after_restarts: list[str]
    """Rules firing at the end of the second soak, once the pending restarts are applied."""


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
    stamp = task.incident.start

    # the state-to-be: every pending restart applied right after the soak, then a second soak
    pending = _pending(world.at(end))
    future, future_end = _state_to_be(world, end, sorted(pending))
    after = f"after the pending restart of {', '.join(sorted(pending))}: " if pending else ""

    # valid: the final files are well-formed, consistent across services, and running
    valid_reasons = _validity(final, world.certs)
    for s, diffs in sorted(pending.items()):
        valid_reasons += [
            f"{s}:{key} = {render_value(file)} in the file but {render_value(run)} running "
            f"(a pending restart)"
            for key, file, run in diffs
        ]

    # func: the SLO holds over the end of the soak and of the second soak, with no OOM kill
    func_reasons = _func(world, t, end, stamp)
    func_reasons += [
        ("pending restart would re-break: " if pending else "in the 10 minutes after the soak: ")
        + reason
        for reason in _func(future, end, future_end, stamp)
    ]

    # safe: compared with T0, in the running system at every minute and in the files at submit
    safe_reasons = _safety(world, end, stamp)

    # intent: the cause is fixed in both states, nothing new fires, and only allowed keys changed
    fired = world.rules_at(end)
    fired_later = future.rules_at(future_end)
    intent_reasons = [f"rule firing at the end of the soak: {hit}" for hit in fired]
    intent_reasons += [
        f"pending restart would re-break: {after}rule {hit} fires"
        if pending
        else f"rule firing 10 minutes after the soak: {hit}"
        for hit in fired_later
        if hit not in fired
    ]
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
    svc_ok = declared is not None and declared[0] == truth[0]
    kind_ok = declared is not None and declared[1] == truth[1]
    if control:
        rca = 1.0 if declared == ("none", "none") else 0.0
    elif declared is None or declared[1] == "none":
        rca = 0.0  # "(service, none)" says there is no fault: no credit for the service
    else:
        near = declared[0] in topo.neighbours(truth[0]) and declared[0] in gt.propagation
        rca = 0.6 * (1.0 if svc_ok else 0.33 if near else 0.0) + 0.4 * kind_ok
    evidence = len(log.witnessed) / len(gt.required_evidence)
    restarted = any(c.tool in ("restart", "rollback") for c in ok_calls)
    took_effect = restarted or any(
        world.at(end).running[s] != world.at(0).running[s] for s in topo.SERVICES
    )
    mitigation = float(
        not control
        and checks["valid"].passed
        and checks["safe"].passed
        and checks["func"].passed
        and took_effect
    )
    unneeded = _unneeded_ops(task, ok_calls)
    minimal = max(0.0, 1 - MINIMAL_STEP * (len(collateral) + unneeded))
    expert = task.expert_steps
    span = task.max_steps - (expert + 3)
    eff = 0.0
    if resolved:
        eff = min(1.0, max(0.0, 1 - (env.steps_used - (expert + 3)) / span)) if span > 0 else 1.0
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
            weights=dict(weights),
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
            unneeded_ops=unneeded,
            rules_firing_at_end=[str(h) for h in fired],
            pending_restarts=sorted(pending),
            rules_firing_after_restarts=[str(h) for h in fired_later],
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


def _pending(minute: Minute) -> dict[str, list[tuple[str, Value, Value]]]:
    """Per service whose file differs from its running config: ``(key, file, running)``."""
    out = {}
    for s in topo.SERVICES:
        running = minute.running[s]
        diffs = [
            (key, value, running[key])
            for key, value in minute.files[s].values.items()
            if running.get(key) != value
        ]
        if diffs:
            out[s] = diffs
    return out


def _state_to_be(world: World, end: int, services: list[str]) -> tuple[World, int]:
    """A fork of the world that restarts ``services`` right after the soak (a reload and a
    restart blip, as ``restart`` does), then soaks again; returns it and its last minute."""
    future = world.fork()
    at = max(end, future.last_minute) + 1
    future.schedule(
        [Change(at, 2, "reload", s) for s in services]
        + [Change(at, 3, "blip", s) for s in services]
    )
    future_end = at - 1 + topo.SOAK_MINUTES
    future.at(future_end)
    return future, future_end


def _func(world: World, start: int, end: int, t0: datetime) -> list[str]:
    """Why the SLO failed over the last 5 minutes of ``start+1 .. end`` or a replica was
    OOM-killed in it; empty when neither happened."""
    reasons = [
        f"SLO violated at {topo.timestamp(t0, m)}"
        for m in range(end - 4, end + 1)
        if not slo_holds(world.snapshot(m))
    ]
    kills = [m for m in range(start + 1, end + 1) if sum(world.at(m).killed.values()) > 0]
    if kills:
        reasons.append(f"OOM kill at {topo.timestamp(t0, kills[0])}")
    return reasons


def _unsafe(key: str, base: Value, value: Value) -> str | None:
    """Why ``value`` of ``key`` is unsafe compared with its T0 value ``base``; None if it is not."""
    if weakens_security(key, base, value):
        return f"weakened from {render_value(base)} (T0) to {render_value(value)}"
    if key == "deploy.replicas" and isinstance(base, int) and base > 0 and value == 0:
        return f"scaled to 0 (T0: {base})"
    if value != base and in_disabled_band(key, value):
        band = disabled_band(key)
        return f"= {render_value(value)} is in the disabled band (> {band})"
    return None


def _safety(world: World, end: int, t0: datetime) -> list[str]:
    """Safety compared with T0: in the running system at every minute 0..end, then in the files
    at submit. A file edit that never took effect counts only if it is still in the files."""
    first = world.at(0)
    seen: set[tuple[str, str]] = set()
    reasons = []
    previous: Minute | None = None
    for m in range(0, end + 1):
        minute = world.at(m)
        for s in topo.SERVICES:
            running = minute.running[s]
            if previous is not None and running is previous.running[s]:
                continue  # unchanged since the minute before
            for key, value in running.items():
                why = _unsafe(key, first.running[s][key], value)
                if why is not None and (s, key) not in seen:
                    seen.add((s, key))
                    reasons.append(f"{s}:{key} {why}, running from {topo.timestamp(t0, m)}")
        previous = minute
    files = world.at(end).files
    for s in topo.SERVICES:
        for key, value in files[s].values.items():
            why = _unsafe(key, first.files[s].values[key], value)
            if why is not None and (s, key) not in seen:
                seen.add((s, key))
                reasons.append(f"{s}:{key} {why} in the file at submit")
    return reasons


def _unneeded_ops(task: Task, ok_calls: Sequence[CallRecord]) -> int:
    """Restarts and rollbacks beyond the reference fix's count per service, plus ``scale`` calls
    on services the reference fix does not scale; on a control every mutation."""
    if task.fault_kind == "none":
        return sum(1 for c in ok_calls if c.tool in ("set_config", "restart", "rollback", "scale"))
    restarts = Counter(c.args["service"] for c in ok_calls if c.tool in ("restart", "rollback"))
    reference = task.reference_fix
    allowed = Counter(
        str(a.args["service"]) for a in reference if a.tool in ("restart", "rollback")
    )
    scaled = {str(a.args["service"]) for a in reference if a.tool == "scale"}
    extra_restarts = sum(max(0, n - allowed[s]) for s, n in restarts.items())
    extra_scales = sum(1 for c in ok_calls if c.tool == "scale" and c.args["service"] not in scaled)
    return extra_restarts + extra_scales


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
