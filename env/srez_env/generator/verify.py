"""The checks every task must pass before it is written (docs/environment.md §5.2, §6.14, §6.15).

The canonical 40 tasks and every generated set are held to the same contract:

* T0 fires exactly the injected rule instances, and the bare task (no injection) fires nothing;
* the scripted oracle passes with reward 1.000, and its reference fix leaves no rule firing;
* a fault violates the gateway SLO at T0 and the null agent fails ``func``; a control holds
  every SLO;
* decoys stay benign: without its injection, the task is healthy from T0-20 on;
* no hard task is passed by the range calibrator (given the ranges it learnt from other worlds);
* the calibrators behave as the task's ``calibration`` block declares (the heuristic expert's
  outcome, the loudest-anomaly calibrator's blame) and, on the hard tier, the loudest anomaly is
  a victim under worst-case render noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from srez_env.agents import make_agent
from srez_env.baselines.loudest import loudest, margin
from srez_env.baselines.ranges import SCOPES, Ranges
from srez_env.baselines.ranges import play as range_play
from srez_env.env import SREEnv
from srez_env.grade import grade_episode
from srez_env.play import play_episode
from srez_env.sim.rules import RuleHit
from srez_env.sim.scenario import build_world, world_at_t0
from srez_env.task import Task
from srez_env.telemetry.status import gateway_slo, slo_holds, status_of
from srez_env.world import topology as topo

RANGE_PROBLEM: Final = "the range calibrator passes a hard task"
SLO_PROBLEM: Final = "the fault does not violate the gateway SLO at T0"


def injected_instances(task: Task) -> list[RuleHit]:
    """The rule instances a task's injection should fire at T0 (§6.3), derived from the file."""
    kind = task.fault_kind
    if kind == "none":
        return []
    edit = task.injection.config[0]
    s, key = edit.service, edit.key
    if kind == "wrong_upstream_port":
        if key == "server.port":  # server side: both db clients are refused
            return sorted([RuleHit(kind, "auth->db"), RuleHit(kind, "payments->db")])
        dependency = key.split(".")[-2] if key.startswith("upstream.") else key.split(".")[0]
        return [RuleHit(kind, f"{s}->{dependency}")]
    if kind == "dependency_timeout":
        dependency = key.split(".")[-2] if key.startswith("upstream.") else key.split(".")[0]
        return [RuleHit(kind, f"{s}->{dependency}")]
    return [RuleHit(kind, s)]


def _play(task: Task, spec: str) -> SREEnv:
    return play_episode(task, make_agent(spec, task, 0), name=spec)


def bare(task: Task) -> Task:
    """The task without its injected config edits (its decoys stay)."""
    return task.model_copy(update={"injection": task.injection.model_copy(update={"config": []})})


def fault_spares_slo(task: Task) -> bool:
    """A fault task whose gateway SLO still holds at T0 (:func:`problems` refuses it). Cheap: the
    generator asks it of every placed task before playing the dearer checks. The world is built
    afresh rather than kept as a per-task template (``world_at_t0``): most tasks asked are
    refused and never played, and a template per refused world is memory a long run keeps."""
    return task.fault_kind != "none" and gateway_slo(build_world(task).at(0).snapshot())


def problems(task: Task, *, calibration: bool = True, ranges: Sequence[Ranges] = ()) -> list[str]:
    """Everything that keeps ``task`` from being a valid task; empty when it passes.

    With ``ranges``, a hard fault task that a range calibrator passes with any of them (putting
    every unusual value back in range, or only the farthest one) is refused too.
    """
    out: list[str] = []
    world = world_at_t0(task)
    fired, wanted = world.rules_at(0), injected_instances(task)
    if fired != wanted:
        out.append(f"T0 fires {list(map(str, fired))}, the injection is {list(map(str, wanted))}")
    healthy = world_at_t0(bare(task))
    for minute in range(-20, 11):
        snap = healthy.snapshot(minute)
        if healthy.rules_at(minute) or not gateway_slo(snap):
            out.append(f"without its injection the task is unhealthy at minute {minute}")
            break
        if set(status_of(snap).values()) != {"healthy"}:
            out.append(f"without its injection a service is not healthy at minute {minute}")
            break
    if task.fault_kind == "none":
        if not (slo_holds(world.snapshot(0)) and slo_holds(world.snapshot(10))):
            out.append("a control must hold every SLO at T0 and T0+10")
    elif gateway_slo(world.snapshot(0)):  # what fault_spares_slo asks, on this world
        out.append(SLO_PROBLEM)
    oracle = _play(task, "scripted")
    grade = grade_episode(oracle.record())
    if grade.reward.total != 1.0 or not grade.passed:
        out.append(f"the oracle scores {grade.reward.total} (passed={grade.passed})")
    end = (oracle.log.submit_clock or 0) + topo.SOAK_MINUTES
    if oracle.world.rules_at(end):
        out.append(f"the reference fix leaves {list(map(str, oracle.world.rules_at(end)))}")
    if not calibration:
        return out
    heuristic = grade_episode(_play(task, "heuristic").record()).passed
    if heuristic != task.calibration.heuristic_expected:
        out.append(
            f"the heuristic expert {'passes' if heuristic else 'fails'}; "
            f"the task declares heuristic_expected={task.calibration.heuristic_expected}"
        )
    verdict = loudest(task)
    if verdict.blame != task.calibration.loudest_expected:
        out.append(
            f"the loudest anomaly is {verdict.blame}; the task declares "
            f"{task.calibration.loudest_expected}"
        )
    if task.difficulty == "hard" and task.fault_kind != "none":
        if verdict.blame == "none":  # nothing loud at all: no victim to point away from the root
            worst, robust = 0.0, False
        else:
            worst, robust = margin(task, verdict.blame)
        if verdict.blame == task.ground_truth.root_cause.service or worst <= 1.0 or not robust:
            out.append(f"the loudest anomaly is not robustly a victim (margin {worst:.2f})")
    if not out and task.difficulty == "hard" and task.fault_kind != "none":
        # last, and only for an otherwise valid task: the plays are the dearest check
        for learnt in ranges:  # one problem per learner that a scope passes with
            for scope in SCOPES:
                if grade_episode(range_play(task, learnt, scope).record()).passed:
                    out.append(f"{RANGE_PROBLEM} (scope {scope})")
                    break
    return out
