"""The range calibrator: how far "put every unusual value back in range" gets.

The memorised calibrator (:mod:`srez_env.baselines.memorised`) reverts values that differ from a
set's modal world; per-task worlds defeat it, because every world differs from the mode somewhere.
This calibrator is its stronger form. It learns, from the public observations of *other* task
sets, the range every configuration key takes in healthy worlds, and on a new task it calls any
value outside that range the fault, with no diagnosis at all. If injected values stand out of
every world's distribution, the shortcut works; the generator's decoys and in-range injections
(``docs/environment.md``, task worlds) are meant to defeat it, and this module measures how well.

* :func:`learn` plays each training task read-only (``list_services`` and ``get_config`` of every
  service at T0). A training set is a published set, so its task files are public: the keys its
  injection edits are left out of the ranges (they are the faults, not the healthy spread), and
  each key is tied to the fault kinds it was injected for.
* :class:`RangeAgent` plays one task from the learnt :class:`Ranges` (see its docstring).
* :func:`run` plays a set and returns the grades; :func:`summary` (shared with the memorised
  calibrator) counts them per tier.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from srez_env.baselines.memorised import (
    Scope,
    Snapshot,
    TierScore,
    key_kind,
    modal,
    observe,
    summary,
)
from srez_env.baselines.policy import (
    Action,
    Observation,
    Policy,
    PolicyAgent,
    call,
    config_values,
    json_object,
)
from srez_env.env import SREEnv
from srez_env.grade import Grade, grade_episode
from srez_env.play import play_episode
from srez_env.task import SERVICES, Task
from srez_env.world.conffile import Value, parse_value, render_value
from srez_env.world.schema import reload_mode, rule_for

__all__ = [
    "SCOPES",
    "Ranges",
    "RangeAgent",
    "Scope",
    "TierScore",
    "learn",
    "play",
    "run",
    "summary",
]

SCOPES: Final[tuple[Scope, ...]] = ("all", "culprit")
UNSEEN_SCORE: Final = math.log(2.0)
"""How far out of range a never-seen categorical value (a port, a flag, a nameserver) counts:
as far as a number twice its learnt bound."""
_DEPLOY = re.compile(r"deploy (\w+) (\S+) -> (\S+)")


@dataclass(frozen=True, slots=True)
class Ranges:
    """What the calibrator learns from a training set."""

    bounds: Mapping[tuple[str, str], tuple[float, float]]
    """(service, key) -> the smallest and largest healthy value of a numeric key."""
    seen: Mapping[tuple[str, str], frozenset[str]]
    """(service, key) -> the healthy values of a categorical key, rendered."""
    modal: Mapping[tuple[str, str], str]
    """(service, key) -> the most frequent healthy value of a categorical key, rendered."""
    kinds: Mapping[str, str]
    """Key name -> the fault kind it was most often injected for in training."""
    tasks: int

    def kind_of(self, service: str, key: str) -> str | None:
        """The fault a key points at: the training set's most frequent, else the key table's."""
        if key in self.kinds:
            return self.kinds[key]
        found = key_kind(service, key)
        return None if found is None else found[1]


def _categorical(key: str, value: Value) -> bool:
    """Ports, flags, names and enums are compared by identity, numbers by magnitude."""
    return not isinstance(value, int) or isinstance(value, bool) or key.endswith("port")


def summarise(snapshots: Iterable[tuple[Snapshot, Task]]) -> Ranges:
    """The ranges of a training set: each task's observation with its injected keys left out."""
    numbers: dict[tuple[str, str], list[float]] = {}
    values: dict[tuple[str, str], Counter[str]] = {}
    kinds: dict[str, Counter[str]] = {}
    n = 0
    for snap, task in snapshots:
        n += 1
        injected = {(e.service, e.key) for e in task.injection.config}
        for _where, injected_key in injected:
            kinds.setdefault(injected_key, Counter())[task.fault_kind] += 1
        for service, config in snap.configs.items():
            for key, value in config.items():
                if (service, key) in injected:
                    continue
                if _categorical(key, value):
                    values.setdefault((service, key), Counter())[render_value(value)] += 1
                else:
                    numbers.setdefault((service, key), []).append(float(value))
    return Ranges(
        bounds={sk: (min(v), max(v)) for sk, v in sorted(numbers.items())},
        seen={sk: frozenset(c) for sk, c in sorted(values.items())},
        modal={sk: modal(c) for sk, c in sorted(values.items())},
        kinds={k: modal(c) for k, c in sorted(kinds.items())},
        tasks=n,
    )


def learn(tasks: Iterable[Task]) -> Ranges:
    """What the calibrator learns by playing a published set ``tasks`` read-only."""
    return summarise((observe(t), t) for t in tasks)


@dataclass(frozen=True, slots=True)
class OutOfRange:
    """One value outside its learnt range, and where it goes back to."""

    service: str
    key: str
    value: Value
    target: Value
    score: float
    """How far out: ``|log(value / bound)|``, or :data:`UNSEEN_SCORE` for a categorical."""


def out_of_range(configs: Mapping[str, Mapping[str, Value]], ranges: Ranges) -> list[OutOfRange]:
    """Every editable value outside its learnt range, farthest out first."""
    found: list[OutOfRange] = []
    for service, config in configs.items():
        for key, value in config.items():
            try:
                reload = reload_mode(key)
            except KeyError:
                continue
            if reload == "read-only" or key == "deploy.version":
                continue
            if (service, key) in ranges.bounds and not _categorical(key, value):
                lo, hi = ranges.bounds[service, key]
                number = float(value)
                if lo <= number <= hi:
                    continue
                bound = lo if number < lo else hi
                score = abs(math.log(max(number, 0.5) / max(bound, 0.5)))
                target: Value = int(round(bound))
            elif (service, key) in ranges.seen:
                if render_value(value) in ranges.seen[service, key]:
                    continue
                score, target = UNSEEN_SCORE, parse_value(ranges.modal[service, key])
            else:
                continue
            if _valid(key, target):
                found.append(OutOfRange(service, key, value, target, score))
    return sorted(found, key=lambda o: (-o.score, o.service, o.key))


def _valid(key: str, value: Value) -> bool:
    rule = rule_for(key)
    if rule.kind == "int":
        return isinstance(value, int) and rule.low <= value <= rule.high
    return True


class RangeAgent(PolicyAgent):
    """Puts every out-of-range value back in range and names the fault from the farthest one.

    1. ``get_config`` of every service.
    2. :func:`out_of_range` against the learnt ranges. The farthest value out is the culprit:
       its service is declared with the fault its key was most often injected for.
    3. Sets the culprit (scope ``culprit``) or every out-of-range value (scope ``all``) to the
       nearest learnt bound (a categorical to its modal value), ``scale`` for replicas, then one
       ``restart`` of each service whose edited keys reload on restart.
    4. With nothing out of range: rolls back the newest deploy of ``get_events`` and declares it
       a ``bad_deploy``; with no deploy either, declares ``none/none``. Then submits.
    """

    name = "range"

    def __init__(self, ranges: Ranges, scope: Scope = "all") -> None:
        super().__init__()
        self.ranges = ranges
        self.scope: Scope = scope

    def policy(self, prompt: Observation) -> Policy:
        configs: dict[str, dict[str, Value]] = {}
        obs: Observation = {}
        for service in SERVICES:
            obs = yield call("get_config", service=service)
            configs[service] = config_values(obs)
        found = out_of_range(configs, self.ranges)
        if not found:
            events = yield call("get_events", since="7d")
            deploys = [_DEPLOY.search(str(line)) for line in json_object(events).get("events", [])]
            newest = next((m for m in deploys if m is not None), None)  # newest first
            if newest is None:
                yield call("declare_root_cause", service="none", fault="none")
                return
            service, before, _after = newest.groups()
            yield call("declare_root_cause", service=service, fault="bad_deploy")
            yield call("rollback", service=service, version=before)
            return
        culprit = found[0]
        kind = self.ranges.kind_of(culprit.service, culprit.key) or "none"
        yield call("declare_root_cause", service=culprit.service, fault=kind)
        todo = found if self.scope == "all" else [culprit]
        budget = int(obs.get("steps_left", 0)) - 2  # the declaration and the submit
        for action in _fit(_resets(todo), budget):  # noqa: UP028 (a generator, not a list)
            yield action


def _resets(todo: Sequence[OutOfRange]) -> list[Action]:
    actions: list[Action] = []
    restart: list[str] = []
    for o in todo:
        if o.key == "deploy.replicas":
            actions.append(call("scale", service=o.service, replicas=int(o.target)))
            continue
        actions.append(
            call("set_config", service=o.service, key=o.key, value=render_value(o.target))
        )
        if reload_mode(o.key) == "restart" and o.service not in restart:
            restart.append(o.service)
    return actions + [call("restart", service=s) for s in restart]


def _fit(actions: list[Action], budget: int) -> list[Action]:
    return actions[: max(0, budget)]


def play(task: Task, ranges: Ranges, scope: Scope = "all") -> SREEnv:
    """Plays one task with the range calibrator; returns the finished episode."""
    return play_episode(task, RangeAgent(ranges, scope), name=f"range-{scope}")


def run(tasks: Iterable[Task], ranges: Ranges, scope: Scope = "all") -> dict[str, Grade]:
    """The grade of every task, played with one set of learnt ranges."""
    return {t.id: grade_episode(play(t, ranges, scope).record()) for t in tasks}
