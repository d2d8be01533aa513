"""The memorised-baseline calibrator: how far "revert whatever differs from usual" gets.

An agent that plays the task set can memorise what the world usually looks like: the modal value
of every configuration key and the modal running version of every service. On a new task it then
reverts whatever differs and names a fault from the key alone, with no diagnosis at all. If the
tasks share one base world, that shortcut solves them; per-task worlds (docs/environment.md §6.15)
are meant to defeat it, and this module measures how well they do.

* :func:`learn` plays a task set read-only (``list_services`` and ``get_config`` of every
  service at T0) and keeps, per (service, key), the modal value and how often each value was
  seen, and the same for running versions. It sees observations only: no ground truth, no
  reference fix, no calibration block.
* :class:`MemorisedAgent` plays one task from a :class:`Memory` (see its docstring).
* :func:`run` plays a task set and returns the grades; :func:`summary` counts them per tier;
  :func:`leave_one_out` plays each task with a memory learned from the others.
"""

from __future__ import annotations

import fnmatch
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from srez_env.baselines.policy import (
    Action,
    Observation,
    Policy,
    PolicyAgent,
    call,
    config_values,
    json_list,
    json_object,
    output_text,
)
from srez_env.catalogue import DRIFT_KEYS
from srez_env.env import SREEnv
from srez_env.grade import Grade, grade_episode
from srez_env.play import play_episode
from srez_env.task import SERVICES, Task
from srez_env.world.conffile import ConfFile, Value, parse_value, render_value
from srez_env.world.schema import Reload, reload_mode

Scope = Literal["all", "culprit"]
"""``all`` reverts every drift (the literal shortcut); ``culprit`` only the declared one."""

TIERS: Final = ("easy", "medium", "hard")
ORDER: Final = ("cache", "db", "auth", "payments", "gateway")  # ties: leaves first
LEAK_RESTARTS: Final = 3  # restarts_1h at or above which a drifted version is called a leak

# The fault a drifted key points at, in priority order (the first row that matches a drift wins
# when several drift equally rarely, see `_rank`): the catalogue's drift keys (srez_env.catalogue,
# `Drift`). Keys with no row (hosts, log level, slow-query threshold, ...) name no fault.
KEY_KINDS: Final = DRIFT_KEYS
VERSION_RANK: Final = len(KEY_KINDS)  # a version drift ranks after every key row


def key_kind(service: str, key: str) -> tuple[int, str] | None:
    """(priority, fault kind) of a drifted key, or None when the key names no fault."""
    for rank, (svc, pattern, kind) in enumerate(KEY_KINDS):
        if svc in ("*", service) and fnmatch.fnmatchcase(key, pattern):
            return rank, kind
    return None


# ---------------------------------------------------------------------------- learning
@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one read-only play of a task shows at T0."""

    configs: Mapping[str, Mapping[str, Value]]  # service -> key -> value, as get_config shows
    versions: Mapping[str, str]  # service -> running version, as list_services shows


@dataclass(frozen=True, slots=True)
class Memory:
    """What an agent memorises from a task set."""

    configs: Mapping[tuple[str, str], Value]  # (service, key) -> modal value
    versions: Mapping[str, str]  # service -> modal running version
    seen: Mapping[tuple[str, str, str], int]  # (service, key, rendered value) -> tasks showing it
    seen_versions: Mapping[tuple[str, str], int]  # (service, version) -> tasks running it
    tasks: int

    def times_seen(self, service: str, key: str, value: Value) -> int:
        """How many learned tasks showed this value (0: never seen)."""
        return self.seen.get((service, key, render_value(value)), 0)


def modal(counts: Counter[str]) -> str:
    """The most frequent text; ties go to the smallest text, so input order does not matter."""
    return min(counts.items(), key=lambda item: (-item[1], item[0]))[0]


def summarise(snapshots: Iterable[Snapshot]) -> Memory:
    """The memory of a set of snapshots (pure; independent of their order)."""
    values: dict[tuple[str, str], Counter[str]] = {}
    versions: dict[str, Counter[str]] = {}
    n = 0
    for snap in snapshots:
        n += 1
        for service, config in snap.configs.items():
            for key, value in config.items():
                values.setdefault((service, key), Counter())[render_value(value)] += 1
        for service, version in snap.versions.items():
            versions.setdefault(service, Counter())[version] += 1
    return Memory(
        configs={sk: parse_value(modal(c)) for sk, c in sorted(values.items())},
        versions={s: modal(c) for s, c in sorted(versions.items())},
        seen={(s, k, v): c for (s, k), cs in sorted(values.items()) for v, c in sorted(cs.items())},
        seen_versions={
            (s, v): c for s, cs in sorted(versions.items()) for v, c in sorted(cs.items())
        },
        tasks=n,
    )


def observe(task: Task) -> Snapshot:
    """Plays a task read-only at T0: the service list, then every service's configuration."""
    env = SREEnv(task, agent="memorised-learn")
    env.reset()
    listing = json.loads(output_text(env.step(call("list_services")).observation))
    configs = {
        s: dict(
            ConfFile.parse(output_text(env.step(call("get_config", service=s)).observation)).values
        )
        for s in SERVICES
    }
    env.force_submit("agent_exit")
    return Snapshot(configs=configs, versions={row["name"]: str(row["version"]) for row in listing})


def learn(tasks: Iterable[Task]) -> Memory:
    """What an agent could memorise by playing ``tasks`` (observations only)."""
    return summarise(observe(t) for t in tasks)


# ---------------------------------------------------------------------------- playing
@dataclass(frozen=True, slots=True)
class Drift:
    """One thing that differs from memory: a key value, or (key None) the running version."""

    service: str
    key: str | None
    value: Value
    usual: Value
    kind: str | None  # the fault it points at; None for keys that name no fault
    rank: tuple[int, int, int, int, int, str]  # lower is declared and reverted first


def _drift(service: str, key: str | None, value: Value, usual: Value, memory: Memory) -> Drift:
    """A drift and its rank. The rank orders, in turn:

    1. keys before versions: config faults are injected as key edits, while benign deploys of
       other services are the usual decoy, so a drifted version is the weaker evidence;
    2. keys that name a fault before keys that name none (decoy edits use inert keys);
    3. the rarer value first: a value memory has seen in many tasks is a recurring decoy;
    4. the `KEY_KINDS` row, then the service (leaves first, `ORDER`), then the key name.
    """
    where = ORDER.index(service)
    if key is None:
        seen = memory.seen_versions.get((service, str(value)), 0)
        # bad_deploy until get_status shows an OOM loop (see MemorisedAgent)
        return Drift(
            service, None, value, usual, "bad_deploy", (1, 0, seen, VERSION_RANK, where, "")
        )
    found = key_kind(service, key)
    row, kind = found if found else (VERSION_RANK + 1, None)
    seen = memory.times_seen(service, key, value)
    return Drift(service, key, value, usual, kind, (0, 0 if found else 1, seen, row, where, key))


def drifts(
    configs: Mapping[str, Mapping[str, Value]], versions: Mapping[str, str], memory: Memory
) -> list[Drift]:
    """Everything that differs from memory, most suspicious first (see `_drift`)."""
    out: list[Drift] = []
    for service, config in configs.items():
        for key, value in config.items():
            usual = memory.configs.get((service, key))
            if usual is None or render_value(usual) == render_value(value):
                continue
            if key == "deploy.version" or _reload(key) in (None, "read-only"):
                continue  # versions come from the listing; others cannot be reverted
            out.append(_drift(service, key, value, usual, memory))
    for service, version in versions.items():
        usual_version = memory.versions.get(service)
        if usual_version is not None and version != usual_version:
            out.append(_drift(service, None, version, usual_version, memory))
    return sorted(out, key=lambda d: d.rank)


class MemorisedAgent(PolicyAgent):
    """Reverts whatever differs from memory and names the fault from the key, undiagnosed.

    1. ``list_services`` (running versions), then ``get_config`` of every service.
    2. :func:`drifts` against memory; the first drift that names a fault is the culprit, and it
       is declared (``none/none`` when no drift names one). A drifted version is a
       ``memory_leak`` when its ``get_status`` shows an OOM loop (``restarts_1h`` of at least
       `LEAK_RESTARTS`), else a ``bad_deploy``.
    3. Reverts, culprit first, then the other drifts in rank order (scope ``all``) or nothing
       else (scope ``culprit``): ``set_config`` to the modal value, plus one ``restart`` of the
       service when the key reloads on restart; ``scale`` for ``deploy.replicas``; ``rollback``
       to the modal version when ``get_status`` lists it in the deploy history.
    4. Submits. Drifts that do not fit the step budget (with the declaration and the submit
       reserved) are dropped from the end of the order.
    """

    name = "memorised"

    def __init__(self, memory: Memory, scope: Scope = "all") -> None:
        super().__init__()
        self.memory = memory
        self.scope: Scope = scope

    def policy(self, prompt: Observation) -> Policy:
        obs = yield call("list_services")
        versions = {str(row["name"]): str(row["version"]) for row in json_list(obs)}
        configs: dict[str, dict[str, Value]] = {}
        for service in SERVICES:
            obs = yield call("get_config", service=service)
            configs[service] = config_values(obs)
        found = drifts(configs, versions, self.memory)
        culprit = next((d for d in found if d.kind is not None), None)
        todo = [culprit] if culprit else []
        if self.scope == "all":
            todo += [d for d in found if d is not culprit]
        todo = _fit(todo, int(obs.get("steps_left", 0)) - 2)  # declare and submit reserved
        statuses: dict[str, Observation] = {}
        for d in todo:
            if d.key is None:
                statuses[d.service] = yield call("get_status", service=d.service)
        if culprit is None:
            yield call("declare_root_cause", service="none", fault="none")
        else:
            kind = culprit.kind
            if culprit.key is None and culprit.service in statuses:
                restarts = int(json_object(statuses[culprit.service]).get("restarts_1h", 0))
                kind = "memory_leak" if restarts >= LEAK_RESTARTS else "bad_deploy"
            yield call("declare_root_cause", service=culprit.service, fault=kind)
        # not `yield from`: a list iterator cannot receive the observations we send
        for action in _reverts(todo, statuses):  # noqa: UP028
            yield action


def _fit(todo: Sequence[Drift], budget: int) -> list[Drift]:
    """The longest prefix of ``todo`` whose reads and reverts fit in ``budget`` steps."""
    kept: list[Drift] = []
    restarted: set[str] = set()
    for d in todo:
        cost = 2 if d.key is None else 1  # get_status + rollback; set_config or scale
        restart = d.key is not None and _reload(d.key) == "restart"
        cost += 1 if restart and d.service not in restarted else 0
        if cost > budget:
            break
        budget -= cost
        kept.append(d)
        if restart:
            restarted.add(d.service)
    return kept


def _reverts(todo: Sequence[Drift], statuses: Mapping[str, Observation]) -> list[Action]:
    """The reverting calls for ``todo``, in its order; restarts last, one per service."""
    actions: list[Action] = []
    restart: list[str] = []
    for d in todo:
        if d.key is None:
            status = json_object(statuses[d.service])
            history = [str(v.get("version")) for v in status.get("deploy_history", [])]
            if str(d.usual) in history and str(d.usual) != str(d.value):
                actions.append(call("rollback", service=d.service, version=str(d.usual)))
        elif d.key == "deploy.replicas":
            actions.append(call("scale", service=d.service, replicas=int(d.usual)))
        else:
            value = render_value(d.usual)
            actions.append(call("set_config", service=d.service, key=d.key, value=value))
            if _reload(d.key) == "restart" and d.service not in restart:
                restart.append(d.service)
    return actions + [call("restart", service=s) for s in restart]


# ---------------------------------------------------------------------------- evaluation
@dataclass(frozen=True, slots=True)
class TierScore:
    """How the agent did on one tier."""

    tasks: int
    passed: int
    mean_reward: float


def play(task: Task, memory: Memory, scope: Scope = "all") -> SREEnv:
    """Plays one task with the memorised agent; returns the finished episode."""
    return play_episode(task, MemorisedAgent(memory, scope), name=f"memorised-{scope}")


def run(tasks: Iterable[Task], memory: Memory, scope: Scope = "all") -> dict[str, Grade]:
    """The grade of every task, played with one memory."""
    return {t.id: grade_episode(play(t, memory, scope).record()) for t in tasks}


def leave_one_out(tasks: Sequence[Task], scope: Scope = "all") -> dict[str, Grade]:
    """The grade of every task, each played with a memory learned from the other tasks."""
    snapshots = [observe(t) for t in tasks]
    grades: dict[str, Grade] = {}
    for i, task in enumerate(tasks):
        memory = summarise(snapshots[:i] + snapshots[i + 1 :])
        grades[task.id] = grade_episode(play(task, memory, scope).record())
    return grades


def summary(grades: Mapping[str, Grade]) -> dict[str, TierScore]:
    """Passed and mean reward per tier (easy, medium, hard; tiers with no task are left out)."""
    out: dict[str, TierScore] = {}
    for tier in TIERS:
        rows = [g for g in grades.values() if g.difficulty == tier]
        if rows:
            mean = sum(g.reward.total for g in rows) / len(rows)
            out[tier] = TierScore(len(rows), sum(g.passed for g in rows), round(mean, 6))
    return out


# ---------------------------------------------------------------------------- observations
def _reload(key: str) -> Reload | None:
    """The key's reload mode, or None for a key the schema does not know."""
    try:
        return reload_mode(key)
    except KeyError:
        return None
