"""Constants derived once from a world's base state (docs/environment.md §6.1, §6.15), never from
live values.

Rules, status and alerts compare against these: the baseline p99 of every service, the CPU limit
each service needs (u = 0.9 at baseline demand with the base replicas), the pool each db client
needs, and the rate limits the K10 rule requires. Every task has its own base world, so every
task has its own :class:`Baseline`; :data:`CANONICAL` is the one of the typical world of §3.2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from srez_env.sim.engine import Config, MinuteInputs, Snapshot, evaluate, num
from srez_env.world import topology as topo
from srez_env.world.conffile import Value
from srez_env.world.schema import BASE_FILES


@dataclass(frozen=True, slots=True)
class Baseline:
    """The derived constants of one base world."""

    ingress_rps: float
    snapshot: Snapshot
    p99: Mapping[str, float]
    rps: Mapping[str, float]
    cpu_needed: Mapping[str, float]
    pool_needed: Mapping[str, int]
    k10_min_rps: float
    k10_min_checkout_rps: float
    k10_min_login_per_minute: float

    def load_need(self, service: str, key: str) -> float | None:
        """What this world's load needs of a limit that follows it (a pool, a rate or login
        limit, a CPU limit), the value its rule compares with; None for any other key."""
        match key:
            case "db.pool_max":
                return float(self.pool_needed[service])
            case "ratelimit.requests_per_second":
                return self.k10_min_rps
            case "ratelimit.checkout_rps":
                return self.k10_min_checkout_rps
            case "ratelimit.login_per_minute":
                return self.k10_min_login_per_minute
            case "resources.cpu_limit_millicores":
                return self.cpu_needed[service]
        return None


def base_inputs(running: Mapping[str, Config], ingress_rps: float) -> MinuteInputs:
    """The fault-free minute: base configs and versions, valid certificates, no incidents."""
    return MinuteInputs(
        running=running,
        props={},
        cert_rejected={},
        killed={},
        restarting={},
        extra_rps={},
        lat_mult={},
        memory_mb={},
        ingress_rps=ingress_rps,
    )


def derive(running: Mapping[str, Config], ingress_rps: float) -> Baseline:
    """Evaluates the base minute once and derives every constant of §6.1 from it."""
    snapshot = evaluate(base_inputs(running, ingress_rps))
    rps = {s: snapshot[s].rps for s in topo.SERVICES}
    replicas = {s: num(running[s], "deploy.replicas") for s in topo.SERVICES}
    pool_demand = {"payments": rps["payments"], "auth": topo.AUTH_DB_SHARE * rps["auth"]}
    logins_per_s = topo.LOGIN_SHARE * ingress_rps * topo.AUTH_ROUTE_SHARE
    return Baseline(
        ingress_rps=ingress_rps,
        snapshot=snapshot,
        p99={s: snapshot[s].p99_ms for s in topo.SERVICES},
        rps=rps,
        cpu_needed={
            s: topo.CPU_BASE_M[s] * rps[s] / (0.9 * replicas[s] * topo.PER_REPLICA_RPS[s])
            for s in topo.SERVICES
        },
        pool_needed={
            s: math.ceil(1.5 * demand * topo.POOL_HOLD_S / replicas[s])
            for s, demand in pool_demand.items()
        },
        k10_min_rps=1.2 * ingress_rps,
        k10_min_checkout_rps=1.2 * ingress_rps * topo.CHECKOUT_ROUTE_SHARE,
        k10_min_login_per_minute=1.2 * logins_per_s * 60,
    )


@lru_cache(maxsize=256)
def _derive_cached(key: tuple[tuple[tuple[str, Value], ...], ...], ingress_rps: float) -> Baseline:
    running = {s: dict(items) for s, items in zip(topo.SERVICES, key, strict=True)}
    return derive(running, ingress_rps)


def baseline_of(running: Mapping[str, Config], ingress_rps: float) -> Baseline:
    """:func:`derive`, memoised on the base configs' values (tasks share few distinct worlds)."""
    key = tuple(tuple(sorted(running[s].items())) for s in topo.SERVICES)
    return _derive_cached(key, ingress_rps)


CANONICAL: Final = baseline_of({s: BASE_FILES[s].values for s in topo.SERVICES}, topo.INGRESS_RPS)
"""The baseline of the typical world (§3.2, §6.1): the anchor the calibration numbers quote."""
