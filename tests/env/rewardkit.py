"""Trajectory builders for the reward tests, each derived from a :class:`Task` alone.

Every builder reads only the task (its ground truth, reference fix and T0 world), so the same
properties run over the 40 tasks today and over any generated set of tasks later. A trajectory is
a list of actions; :func:`grade` plays it (then submits) and grades it.
"""

from __future__ import annotations

from typing import Any

from envkit import a, grade_of, play

from srez_env.grade import Grade, grade_episode
from srez_env.grade.magnitude import Limit, base_values, task_limits
from srez_env.sim.baseline import baseline_of
from srez_env.sim.rules import RuleHit
from srez_env.task import Task
from srez_env.vocab import SERVICES
from srez_env.world.conffile import Value, render_value
from srez_env.world.schema import protective_keys, reload_mode, rule_for

Action = dict[str, Any]

grade = grade_of
"""Plays a trajectory, submits and grades it (the reward tests call it ``rk.grade``)."""


def graded(task: Task, actions: list[Action]) -> tuple[Grade, list[RuleHit], list[RuleHit]]:
    """The grade, the rules firing at T0 and those firing at the end of the soak."""
    env = play(task, actions)
    g = grade_episode(env.record())
    end = (env.log.submit_clock or 0) + 10
    return g, env.world.rules_at(0), env.world.rules_at(end)


_T0: dict[str, tuple[dict[str, dict[str, Value]], dict[str, str]]] = {}


def _t0(task: Task) -> tuple[dict[str, dict[str, Value]], dict[str, str]]:
    key = task.model_dump_json()  # tasks are not hashable; their JSON identifies them
    if key not in _T0:
        world = play(task, [], submit=False).world
        values = {s: dict(world.at(0).files[s].values) for s in SERVICES}
        previous = {}
        for s in SERVICES:
            names = [v.name for v in world.history(s, 0)]
            current = str(values[s]["deploy.version"])
            if current in names and names.index(current) > 0:
                previous[s] = names[names.index(current) - 1]
        _T0[key] = (values, previous)
    return _T0[key]


def t0_values(task: Task) -> dict[str, dict[str, Value]]:
    """Each service's file values at T0 (what the agent first sees)."""
    return _t0(task)[0]


def previous_versions(task: Task) -> dict[str, str]:
    """Per service, the version deployed before the one running at T0 (a rollback target)."""
    return _t0(task)[1]


# ---------------------------------------------------------------------------------- the honest
def evidence(task: Task) -> list[Action]:
    """The oracle's evidence calls, in file order."""
    return [
        a(item.tool, **item.match, **item.oracle_args)
        for item in task.ground_truth.required_evidence
    ]


def declaration(task: Task, fault: str | None = None) -> Action:
    """The true declaration (or the true service with another fault kind)."""
    root = task.ground_truth.root_cause
    return a("declare_root_cause", service=root.service, fault=fault or root.fault)


def reference_fix(task: Task) -> list[Action]:
    return [a(x.tool, **x.args) for x in task.reference_fix]


def oracle(task: Task) -> list[Action]:
    """Evidence, the true declaration, the reference fix (the scripted expert)."""
    return [*evidence(task), declaration(task), *reference_fix(task)]


def diagnosis_only(task: Task) -> list[Action]:
    """The required evidence and the true declaration, and no change."""
    return [*evidence(task), declaration(task)]


def is_control(task: Task) -> bool:
    return task.fault_kind == "none"


# ---------------------------------------------------------------------------------- the hacks
def rebreaks(task: Task) -> list[tuple[str, list[Action]]]:
    """Class 1: the reference fix, then each restart-reload key it set written back to its T0
    value in the file (a pending restart that would re-break the service)."""
    out = []
    for x in task.reference_fix:
        if x.tool == "set_config" and reload_mode(str(x.args["key"])) == "restart":
            s, key = str(x.args["service"]), str(x.args["key"])
            broken = render_value(t0_values(task)[s][key])
            back = a("set_config", service=s, key=key, value=broken)
            out.append((f"{s}:{key}={broken}", [*oracle(task), back]))
    return out


def limits(task: Task) -> dict[tuple[str, str], Limit]:
    """What each limit may be in the task's world (its need, over-provisioning line and band)."""
    world = task.base_world()
    return task_limits(task, baseline_of(base_values(task), world.ingress_rps))


def band_value(task: Task, service: str, key: str) -> int | None:
    """The smallest value in a protective key's band in the task's world; None when the band
    lies above the schema's largest value (no value can be in it)."""
    value = limits(task)[(service, key)].band + 1
    return value if value <= rule_for(key).high else None


def set_limit(task: Task, service: str, key: str, value: int) -> list[Action]:
    """``service:key`` set to ``value``, restarted if the key needs a restart."""
    push = [a("set_config", service=service, key=key, value=str(value))]
    if reload_mode(key) == "restart":
        push.append(a("restart", service=service))
    return push


def band_pushes(task: Task) -> list[tuple[str, list[Action]]]:
    """Class 3: the oracle, then one protective key of a service on the task's propagation path
    (every service on a control) pushed into its world's band, restarted if it needs a restart."""
    services: list[str] = [*task.ground_truth.propagation] or list(SERVICES)
    out = []
    for s in services:
        for key in protective_keys(s):
            value = band_value(task, s, key)
            if value is not None:
                out.append((f"{s}:{key}", [*oracle(task), *set_limit(task, s, key, value)]))
    return out


def limit_fixes(task: Task) -> list[tuple[int, str, str, int]]:
    """The reference fix's edits of a protective key, as ``(position in the fix, service, key,
    value)``."""
    return [
        (i, str(x.args["service"]), str(x.args["key"]), int(str(x.args["value"])))
        for i, x in enumerate(task.reference_fix)
        if x.tool == "set_config" and (str(x.args["service"]), str(x.args["key"])) in limits(task)
    ]


def over_provisioned_fixes(task: Task) -> list[tuple[str, list[Action]]]:
    """The oracle with each limit its reference fix sets raised just past the over-provisioning
    line, and to the edge of its world's band (each at most the schema's largest value, and kept
    only when that is still over the line)."""
    out = []
    for position, s, key, _ in limit_fixes(task):
        limit = limits(task)[(s, key)]
        high = rule_for(key).high
        for name, value in (("just over", limit.most + 1), ("band edge", limit.band)):
            value = min(value, high)
            if value > limit.most:
                out.append((f"{s}:{key} {name}", reference_fix_with(task, position, value)))
    return out


def reference_fix_with(task: Task, position: int, value: int) -> list[Action]:
    """The oracle, with the reference fix's edit at ``position`` setting ``value`` instead."""
    fix = reference_fix(task)
    edit = fix[position]
    fix[position] = a("set_config", **{**edit["args"], "value": str(value)})
    return [*evidence(task), declaration(task), *fix]


def tls_up_down(task: Task, *, restart: bool) -> list[Action]:
    """Class 4: the oracle, then gateway TLS raised one step and lowered back to T0."""
    base = str(t0_values(task)["gateway"]["tls.min_version"])
    up = "TLS1.3" if base != "TLS1.3" else base
    steps = [a("set_config", service="gateway", key="tls.min_version", value=up)]
    if restart:
        steps.append(a("restart", service="gateway"))
    steps.append(a("set_config", service="gateway", key="tls.min_version", value=base))
    if restart:
        steps.append(a("restart", service="gateway"))
    return [*oracle(task), *steps]


def reverted_edit(task: Task) -> list[Action]:
    """The oracle, then an inert key changed and changed back (the same shape as TLS up/down)."""
    base = str(t0_values(task)["gateway"]["logging.level"])
    other = "debug" if base != "debug" else "info"
    return [
        *oracle(task),
        a("set_config", service="gateway", key="logging.level", value=other),
        a("set_config", service="gateway", key="logging.level", value=base),
    ]


def memory_mask(task: Task, *, declare: bool) -> list[Action]:
    """Class 5: the evidence, maybe the declaration, then the root's memory limit quadrupled and
    the root restarted (masks a leak without removing it)."""
    root = task.ground_truth.root_cause.service
    limit = int(t0_values(task)[root]["resources.memory_limit_mb"])
    steps = [
        a(
            "set_config",
            service=root,
            key="resources.memory_limit_mb",
            value=str(min(65536, 4 * limit)),
        ),
        a("restart", service=root),
    ]
    return [*evidence(task), *([declaration(task)] if declare else []), *steps]


def shotguns(task: Task) -> list[tuple[str, list[Action]]]:
    """Class 5: evidence, the true declaration and the reference fix, plus a shotgun: every
    service rolled back, restarted or scaled up, or every db pool and the db's limit raised (to
    the schema's maxima, and to large values that stay under the band)."""
    fix = reference_fix(task)
    rolled = {str(x.args["service"]) for x in task.reference_fix if x.tool == "rollback"}
    rollbacks = [
        a("rollback", service=s, version=v)
        for s, v in previous_versions(task).items()
        if s not in rolled
    ]
    values = t0_values(task)
    scale_ups = [
        a("scale", service=s, replicas=min(10, int(values[s]["deploy.replicas"]) + 1))
        for s in SERVICES
    ]

    def pools(pool: int, limit: int) -> list[Action]:
        return [
            a("set_config", service="auth", key="db.pool_max", value=str(pool)),
            a("set_config", service="payments", key="db.pool_max", value=str(pool)),
            a("set_config", service="db", key="server.max_connections", value=str(limit)),
            a("restart", service="db"),
        ]

    head = [*evidence(task), declaration(task)]
    return [
        ("rollback-all", [*head, *fix, *rollbacks]),
        ("restart-all", [*head, *fix, *(a("restart", service=s) for s in SERVICES)]),
        ("scale-up-all", [*head, *fix, *scale_ups]),
        ("max-every-pool", [*head, *fix, *pools(500, 5000)]),  # the schema's maxima
        ("large-pools-under-the-band", [*head, *fix, *pools(100, 1000)]),
    ]


def restart_all(task: Task) -> list[Action]:
    """Class 6: the evidence, the true declaration, then every service restarted."""
    return [*diagnosis_only(task), *(a("restart", service=s) for s in SERVICES)]


def mitigation_candidates(task: Task) -> list[tuple[str, list[Action]]]:
    """Generic mitigations after the evidence and the true declaration: the root's memory limit
    doubled, the root scaled up, both db pools doubled. Each keeps the SLO on some tasks while
    the cause still fires; the caller keeps those that do."""
    root = task.ground_truth.root_cause.service
    if root == "none":
        return []
    values = t0_values(task)
    limit = int(values[root]["resources.memory_limit_mb"])
    replicas = int(values[root]["deploy.replicas"])
    head = diagnosis_only(task)
    out = [
        (
            "memory-limit",
            [
                *head,
                a(
                    "set_config",
                    service=root,
                    key="resources.memory_limit_mb",
                    value=str(min(65536, 2 * limit)),
                ),
                a("restart", service=root),
            ],
        ),
        ("scale-up", [*head, a("scale", service=root, replicas=min(10, replicas + 2))]),
    ]
    pools = [
        a("set_config", service=s, key="db.pool_max", value=str(2 * int(values[s]["db.pool_max"])))
        for s in ("auth", "payments")
    ]
    out.append(("pools", [*head, *pools]))
    return out
