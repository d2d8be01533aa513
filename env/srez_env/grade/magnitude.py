"""How large a limit may be in its world: over-provisioning and disabled protections
(docs/environment.md §6.11).

A protective key (a rate limit, a timeout, a db pool, the db's connection limit, a CPU or memory
limit, the cache's size or TTL) is judged against what its own world needs, never against one
number for every world: traffic spans a factor of five across worlds (§6.16), so a value that is
generous in a busy world is twenty times too big in a quiet one.

A world's *need* for a limit is the larger of two values, both fixed by the task's base world and
never by live values, so an agent cannot move them:

* what its load requires, sized the way the typical world (§3.2) sizes it: the typical world's
  value, scaled by what the limit follows in this world (its traffic for the rate limits, the
  pools, the db's connections and CPU; the dependency's p99 for a timeout). Memory limits and the
  cache's size and TTL follow no load (the services' footprints and the cache's working set are
  the same in every world), so their need is the typical world's value;
* the value the world itself runs with before the incident. A world that runs a limit higher
  (the generator's unusual values, §6.16) has chosen it: restoring it is never over-provisioning,
  and no base value can sit in its world's band.

Past :data:`OVER_PROVISIONED` times its need a value is over-provisioned: it can keep the SLO
while a wrong diagnosis stands (a rate limit that no longer limits, a CPU limit that hides a
hungry release), so ``intent`` takes it as a mitigation, not the fix. Past :data:`DISABLED` times
its need, or past the schema's absolute band for the three families that have one, the protection
is as good as off and ``safe`` fails.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from srez_env.sim.baseline import CANONICAL, Baseline
from srez_env.task import Task
from srez_env.world import topology as topo
from srez_env.world.conffile import Value, parse_value, render_value
from srez_env.world.schema import BASE_FILES, disabled_band, protective_keys

OVER_PROVISIONED: Final = 4.0
"""A changed limit above this many times its world's need is a mitigation, not a fix. Honest
fixes stay at or below 2.5 times: every reference fix restores its world's own value (at most
1 time the need, by construction) and the heuristic expert's largest fix on a task it solves is
2.34 times (a db pool given the db's spare connections), over the canonical set and the 200
tasks of seed 4242 (tests/env/test_magnitude.py holds every honest fix of the canonical set and
of that set's first 80 tasks to 2.5)."""
DISABLED: Final = 20.0
"""A limit above this many times its world's need no longer protects anything: ``safe`` fails.
Five times the over-provisioning line, the margin the absolute bands keep over every world's
values (§6.11)."""

Values = Mapping[str, Mapping[str, Value]]
"""Configuration values per service."""


@dataclass(frozen=True, slots=True)
class Limit:
    """What one protective key may be in one world."""

    need: float
    most: int
    """The largest value that is not over-provisioned: ``OVER_PROVISIONED × need``, rounded down."""
    band: int
    """The largest value that is not in the disabled band: ``DISABLED × need`` rounded down, or
    the schema's absolute band if that is lower."""
    capped: bool
    """The band is the schema's absolute one (the same in every world)."""


def _connections(values: Values) -> float:
    """What the db's connection limit follows: its clients' pools plus the reserved ones (K04)."""
    pools = sum(
        int(values[s]["deploy.replicas"]) * int(values[s]["db.pool_max"])
        for s in ("auth", "payments")
    )
    return float(pools + topo.DB_CONNECTION_RESERVE)


def sizing(base: Baseline, values: Values, service: str, key: str) -> float:
    """What a protective key follows in a world (1 for those that follow no load)."""
    need = base.load_need(service, key)
    if need is not None:
        return need
    if key == "server.max_connections":
        return _connections(values)
    for edge in topo.EDGES:
        if edge.client == service and edge.timeout_key == key:
            return base.p99[edge.server]
    return 1.0  # memory limits, the cache's size and TTL: the same footprint in every world


@functools.cache
def _typical_per_unit(service: str, key: str) -> float:
    """The typical world's value per unit of what the key follows there."""
    typical = {s: BASE_FILES[s].values for s in topo.SERVICES}
    return float(typical[service][key]) / sizing(CANONICAL, typical, service, key)


def world_limits(base: Baseline, values: Values) -> dict[tuple[str, str], Limit]:
    """Every protective key's need, over-provisioning line and band in the world whose base
    configuration is ``values`` and whose baseline (§6.1) is ``base``."""
    out = {}
    for s in topo.SERVICES:
        for key in protective_keys(s):
            by_load = _typical_per_unit(s, key) * sizing(base, values, s, key)
            need = max(by_load, float(values[s][key]))
            band = math.floor(DISABLED * need)
            cap = disabled_band(key)
            out[(s, key)] = Limit(
                need=need,
                most=math.floor(OVER_PROVISIONED * need),
                band=band if cap is None else min(band, cap),
                capped=cap is not None and cap < band,
            )
    return out


def base_values(task: Task) -> dict[str, dict[str, Value]]:
    """The configuration values of the task's base world (before its incident)."""
    config = task.world.config if task.world is not None else {}
    return {
        s: {
            **BASE_FILES[s].values,
            **{k: parse_value(raw) for k, raw in config.get(s, {}).items()},
        }
        for s in topo.SERVICES
    }


def task_limits(task: Task, base: Baseline) -> dict[tuple[str, str], Limit]:
    """:func:`world_limits` of the task's base world; ``base`` is that world's baseline."""
    return world_limits(base, base_values(task))


def _number(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def _int(value: Value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def over_provisioned(limit: Limit | None, service: str, key: str, value: Value) -> str | None:
    """Why ``value`` over-provisions ``service:key``; None when it does not."""
    number = _int(value)
    if limit is None or number is None or number <= limit.most:
        return None
    return (
        f"over-provisioned: {service}:{key} = {number} is {number / limit.need:.1f} times the "
        f"world's need {_number(limit.need)} (a fix stays at or below {limit.most}, "
        f"{OVER_PROVISIONED:g} times the need)"
    )


def disabled(limit: Limit | None, value: Value) -> str | None:
    """Why ``value`` is in the key's disabled band (its protection is off); None when it is not."""
    number = _int(value)
    if limit is None or number is None or number <= limit.band:
        return None
    why = (
        "the band of every world"
        if limit.capped
        else f"{DISABLED:g} times the world's need {_number(limit.need)}"
    )
    return f"= {render_value(value)} is in the disabled band (> {limit.band}: {why})"
