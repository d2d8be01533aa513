"""Unusual but harmless values: the decoys that every drawn world carries (docs/environment.md §6.16).

A real fleet is full of settings that look odd and are fine: a timeout ten times the usual, a pool
sized for a traffic peak, a rate limit just above what this service's traffic needs, a database
moved to another port with every client following it, logs kept for a year. Each world gets a few
of them, far outside the spread the rest of the world distribution gives that key, and each one is
checked to leave the world healthy. They are not faults: touching one is a collateral edit that
the grade's ``intent`` check and the ``minimal`` component punish, and lowering a rate limit or a
connection limit below what the traffic needs breaks the service.

So an agent that learns every key's usual range and puts back whatever stands out (the range
calibrator, :mod:`srez_env.baselines.ranges`) touches decoys and blames them, while an agent that
diagnoses from symptoms ignores them.

Every value is computed from the world's own load, so a decoy that is low stays adequate:
``low`` values sit just above the threshold the world's baseline derives (§6.1), ``high`` values
well above the usual draw and at most a fifth of their world's band (:func:`near_a_band`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from functools import partial
from typing import Final

from srez_env.grade.magnitude import world_limits
from srez_env.sim.baseline import Baseline
from srez_env.world import topology as topo
from srez_env.world.conffile import Value
from srez_env.world.schema import BASE_FILES, RATE_LIMIT_BAND

DECOYS: Final = {"easy": (1, 2), "medium": (2, 4), "hard": (4, 7)}
"""How many unusual values a world gets, by the tier of the task placed in it (a range, drawn):
harder tasks hide their fault among more of them."""
MOVABLE_SERVERS: Final = {
    "db": ("db.port", ("auth", "payments")),
    "cache": ("cache.port", ("payments",)),
}
"""Servers a decoy may move to another port: (the clients' port key, the clients)."""

Config = dict[str, dict[str, Value]]


@dataclass(frozen=True, slots=True)
class Decoy:
    """One candidate: a key of a service, and how to draw its unusual value."""

    service: str
    key: str
    draw: Callable[[random.Random], int]


def _up(value: float, step: int) -> int:
    return int(math.ceil(value / step) * step)


def _spread(r: random.Random, low: float, high: float) -> float:
    """Log-uniform in [low, high]: a heavy spread, so no sample of worlds covers its tail."""
    return math.exp(r.uniform(math.log(low), math.log(high)))


def _typical(service: str, key: str) -> int:
    return int(BASE_FILES[service].values[key])


def _scaled(base: float, low: float, high: float, step: int, cap: int, r: random.Random) -> int:
    """``base`` times a log-uniform factor in [low, high], rounded up to ``step``, at most ``cap``."""
    return min(cap, _up(base * _spread(r, low, high), step))


def _near(base: float, low: float, high: float, step: int, r: random.Random) -> int:
    """``base`` times a uniform factor in [low, high] (just above a threshold), rounded up."""
    return _up(base * r.uniform(low, high), step)


def _above(need: int, r: random.Random) -> int:
    return need + r.randint(1, 2)


def _replicas(r: random.Random) -> int:
    return r.randint(8, 10)


def _retention(r: random.Random) -> int:  # a log kept for a day or two, or for years
    return r.choice((1, 2, _up(_spread(r, 90, 1500), 1)))


def _db_retention(r: random.Random) -> int:
    # db logs fill its disk at 393 days (the rule warns from 322): a long retention short of that
    return r.choice((1, 2, 3, r.randint(150, 320)))


def _short_ttl(r: random.Random) -> int:
    return r.randrange(60, 100, 5)


def _slow_query(r: random.Random) -> int:
    return _up(r.choice((_spread(r, 1, 60), _spread(r, 3000, 60000))), 1)


def _port_offset(r: random.Random) -> int:
    return r.choice((-2, -1, 1, 2, 3, 10, 100))


def _drawn_in_apply(r: random.Random) -> int:
    return 0


def candidates(config: Config, load: Baseline) -> list[Decoy]:
    """Every decoy this world can take, with its value drawn from the world's load."""

    def current(s: str, k: str) -> int:
        return int(config[s].get(k, BASE_FILES[s].values[k]))

    out: list[Decoy] = []
    for edge in topo.EDGES:
        typical = _typical(edge.client, edge.timeout_key)
        floor = 2 * load.p99[edge.server]
        out.append(
            Decoy(edge.client, edge.timeout_key, partial(_scaled, typical, 3, 15, 10, 20000))
        )
        out.append(
            Decoy(edge.client, edge.timeout_key, partial(_scaled, floor, 1.15, 1.6, 10, 20000))
        )
    for s in ("auth", "payments"):
        need = load.pool_needed[s]
        out.append(Decoy(s, "db.pool_max", partial(_scaled, need, 3, 12, 1, 200)))
        out.append(Decoy(s, "db.pool_max", partial(_above, need)))
    for s in ("gateway", "auth", "payments"):
        out.append(Decoy(s, "deploy.replicas", _replicas))
    limits = {
        ("gateway", "ratelimit.requests_per_second"): load.k10_min_rps,
        ("gateway", "ratelimit.checkout_rps"): load.k10_min_checkout_rps,
        ("auth", "ratelimit.login_per_minute"): load.k10_min_login_per_minute,
    }
    for (s, key), need_f in limits.items():
        cap = RATE_LIMIT_BAND[key] // 2
        out.append(Decoy(s, key, partial(_scaled, need_f, 4, 20, 10, cap)))
        out.append(Decoy(s, key, partial(_near, need_f, 1.05, 1.12, 10)))
    for s in topo.SERVICES:
        cpu, need_m = current(s, "resources.cpu_limit_millicores"), load.cpu_needed[s]
        out.append(
            Decoy(s, "resources.cpu_limit_millicores", partial(_scaled, cpu, 2.5, 10, 100, 16000))
        )
        out.append(
            Decoy(s, "resources.cpu_limit_millicores", partial(_near, need_m, 1.08, 1.18, 100))
        )
        memory = current(s, "resources.memory_limit_mb")
        out.append(
            Decoy(s, "resources.memory_limit_mb", partial(_scaled, memory, 3, 12, 256, 65536))
        )
        if s != "db":
            out.append(Decoy(s, "logging.retention_days", _retention))
    out.append(Decoy("cache", "memory.maxmemory_mb", partial(_scaled, 1, 1600, 4096, 64, 4096)))
    working_set = topo.CACHE_WORKING_SET_MB
    out.append(Decoy("cache", "memory.maxmemory_mb", partial(_near, working_set, 1.03, 1.2, 8)))
    out.append(Decoy("cache", "keys.default_ttl_s", partial(_scaled, 1, 1800, 86400, 60, 86400)))
    out.append(Decoy("cache", "keys.default_ttl_s", _short_ttl))
    out.append(Decoy("db", "logging.retention_days", _db_retention))
    out.append(Decoy("db", "logging.slow_query_ms", _slow_query))
    out.append(Decoy("db", "server.max_connections", _drawn_in_apply))  # sized by the pools
    for s in ("gateway", "auth", "payments"):
        out.append(Decoy(s, "resolver.nameserver", _drawn_in_apply))  # a rarer resolver
    for server in MOVABLE_SERVERS:
        out.append(Decoy(server, "server.port", _port_offset))  # an offset, applied to clients too
    return out


def apply(
    decoy: Decoy, rng: random.Random, config: Config, ports: MutableMapping[str, int]
) -> None:
    """Writes one decoy into ``config`` (and moves a server's clients with it)."""
    value = decoy.draw(rng)
    if decoy.key == "server.port":
        key, clients = MOVABLE_SERVERS[decoy.service]
        moved = ports[decoy.service] + value
        ports[decoy.service] = moved
        config[decoy.service]["server.port"] = moved
        for client in clients:
            config[client][key] = moved
        return
    if decoy.key == "resolver.nameserver":
        rare = [ns for ns in topo.GOOD_NAMESERVERS if ns not in topo.USUAL_NAMESERVERS]
        config[decoy.service][decoy.key] = rng.choice(rare)
        return
    if decoy.key == "server.max_connections":
        needed = connections_needed(config)
        value = rng.choice(
            (needed + rng.randint(1, 4), min(1900, _up(needed * _spread(rng, 3, 12), 10)))
        )
    config[decoy.service][decoy.key] = value


def connections_needed(config: Mapping[str, Mapping[str, Value]]) -> int:
    """The db connections the clients' pools can open, plus the reserved ones (K04)."""

    def get(s: str, k: str) -> int:
        return int(config[s].get(k, BASE_FILES[s].values[k]))

    pools = sum(get(s, "deploy.replicas") * get(s, "db.pool_max") for s in ("auth", "payments"))
    return pools + topo.DB_CONNECTION_RESERVE


def near_a_band(running: Mapping[str, Mapping[str, Value]], load: Baseline) -> bool:
    """A protective key of the world ``running`` (whose baseline is ``load``) above a fifth of its
    world's band (:mod:`srez_env.grade.magnitude`): a decoy never looks like a disabled protection,
    and a fix restoring it never comes near one. A world's own value is part of its need, so only
    the absolute bands of the schema can refuse a decoy."""
    return any(
        int(running[s][key]) * 5 > limit.band
        for (s, key), limit in world_limits(load, running).items()
    )
