"""Expanding a row of the matrix into a validated task (docs/environment.md §3.6, §6.14).

The row gives what is particular to a task, its tier gives the difficulty profile, the playbook
gives the evidence, and the calibration block comes from the §6.14 table; :func:`build` then
recomputes the calibration with both calibrators and refuses a row on which they disagree with
the table, so the table, the files and the simulator cannot drift apart.
"""

from __future__ import annotations

from datetime import timedelta

from srez_env.baselines.heuristic import HeuristicAgent
from srez_env.baselines.loudest import loudest
from srez_env.generator.matrix import DEPLOY_KINDS, Json, Row, load
from srez_env.generator.playbook import playbook
from srez_env.grade import grade_episode
from srez_env.play import play_episode
from srez_env.task import Calibration, Task, derive_seed


def fault_event(row: Row) -> str:
    """Whether the fault's own audit event is listed (§3.6 profiles, §6.9)."""
    if row.kind in ("K00", "K02"):
        # No fault event exists: controls have no fault, and a K02 edit is days old (§6.9).
        return "hidden"
    if row.kind == "K13" and row.tier == "H":
        return "camouflaged"
    if row.tier == "E" or row.kind in DEPLOY_KINDS:
        return "visible"
    return "hidden"


def brief(row: Row) -> str:
    since = load().t0 - timedelta(minutes=row.onset)
    text = row.brief.replace("{since}", f"{since:%H:%M}")
    return text if text.endswith("fix.") else f"{text} {load().brief_end}"


def evidence(row: Row) -> list[Json]:
    """The row's required evidence. On the hard tier a fault's signature lines are not written
    (``fault_lines: generic``, §6.8), so no log read can witness it: the evidence is what the
    other tools show, renumbered."""
    items = playbook(row)
    if row.tier == "H":
        items = [item for item in items if item["tool"] != "get_logs"]
        for n, item in enumerate(items, start=1):
            item["id"] = f"E{n}"
    return items


def calibrate(task: Task) -> Calibration:
    """Recomputes the calibration block by running both calibrators on ``task`` (§6.12, §6.13).

    The heuristic expert plays the task from observations only ("solved" means the run passed);
    the loudest-anomaly calibrator blames a service from the T0 metrics. :func:`build` refuses to
    write a task whose computed outcomes differ from the design table, so the table, the files and
    the simulator cannot drift apart.
    """
    env = play_episode(task, HeuristicAgent(), name="heuristic")
    return Calibration(
        heuristic_expected=grade_episode(env.record()).passed,
        loudest_expected=loudest(task).blame,
    )


def build(row: Row, *, table: bool = True) -> Task:
    """Expands one row into a validated task.

    With ``table`` (a row of the matrix), the calibrators must give what the row's design table
    says; without it (a row the incident space made, §6.20), the task records what they give.
    """
    tier = load().tiers[row.tier]
    kind = load().kind_name[row.kind]
    heuristic, blamed = row.calibration
    injection: Json = {
        "config": [
            {"service": s, "key": k, "value": v, "minutes_before": row.inject_minutes_before}
            for s, k, v in row.inject
        ],
        "versions": list(row.versions),
        "certs": list(row.certs),
        "events": list(row.events),
    }
    data: Json = {
        "schema_version": 1,
        "id": row.id,
        "title": row.title,
        "fault_kind": kind,
        "difficulty": tier.name,
        "seed": derive_seed(row.id),
        "max_steps": tier.max_steps,
        "incident": {"start": load().t0, "onset_min_before": row.onset, "brief": brief(row)},
        "injection": injection,
        "noise": {
            "alert_scope": tier.alert_scope,
            "fault_event": fault_event(row),
            "decoy_events": list(row.decoy_events),
            "decoy_logs": list(row.decoy_logs),
            "decoy_effects": list(row.decoy_effects),
            "alert_also": list(row.alert_also),
            "log_dedup": row.dedup,
            "benign_lines_per_min": tier.benign_lines_per_min,
            "fault_lines": "generic" if row.tier == "H" else "specific",
        },
        "ground_truth": {
            "root_cause": {"service": row.root, "fault": kind},
            "propagation": list(row.propagation),
            "required_evidence": evidence(row),
            "allowed_changes": list(row.allowed),
            "allowed_restarts": list(row.restarts),
        },
        "reference_fix": list(row.fix),
        "calibration": {"heuristic_expected": heuristic, "loudest_expected": blamed},
    }
    task = Task.model_validate(data)
    computed = calibrate(task)
    if not table:
        task = task.model_copy(update={"calibration": computed})
        check_row(row, task, evidence_counts=(2, 3, 4))
        return task
    if computed != task.calibration:
        msg = (
            f"{row.id}: calibrators give {computed.model_dump()}, "
            f"the design table says {task.calibration.model_dump()}"
        )
        raise ValueError(msg)
    check_row(row, task)
    return task


def check_row(row: Row, task: Task, evidence_counts: tuple[int, ...] | None = None) -> None:
    """Matrix rules the schema cannot see, because they need the row's intent (§3.6, §6.10).
    ``evidence_counts`` replaces the tier's own counts of required evidence."""
    versions = {(v["service"], v["version"]): v["minutes_before"] for v in row.versions}
    for event in task.noise.decoy_events:
        deployed = versions.get((event.service, str(event.value)))
        if event.kind == "deploy" and deployed != event.minutes_before:
            msg = f"{row.id}: decoy deploy {event.text!r} needs its version at the same minute"
            raise ValueError(msg)
    onset = load().t0 - timedelta(minutes=row.onset)
    for edit in task.injection.config if row.kind == "K02" else ():
        # §6.9: the certificate the injected edit points back to expires exactly at the onset
        if not any(c.path == edit.value and c.not_after == onset for c in task.injection.certs):
            msg = f"{row.id}: the certificate {edit.value} must expire at the onset ({onset})"
            raise ValueError(msg)
    for spec in task.injection.versions:
        if "changelog" not in spec.props:
            msg = f"{row.id}: version {spec.service} {spec.version} needs a changelog"
            raise ValueError(msg)
    n = len(task.ground_truth.required_evidence)
    wanted = {"E": (3,), "M": (3, 4), "H": (3,)}[row.tier] if row.kind != "K00" else (3,)
    wanted = evidence_counts or wanted
    if n not in wanted:
        msg = f"{row.id}: {n} evidence items, the {row.tier} tier wants {wanted}"
        raise ValueError(msg)
    for item in task.ground_truth.required_evidence:
        if item.tool == "get_config" and item.witness is not None and " = " not in item.witness:
            msg = f"{row.id}: {item.id}: a get_config witness must be a whole 'key = value' line"
            raise ValueError(msg)
    if not task.incident.brief.endswith(("apply a minimal fix.", "apply a minimal, durable fix.")):
        msg = f"{row.id}: the brief must end with {load().brief_end!r}"
        raise ValueError(msg)
