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
well above the usual draw and below every security band.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Final

from srez_env.sim.baseline import Baseline
from srez_env.world import topology as topo
from srez_env.world.conffile import Value
from srez_env.world.schema import BASE_FILES, RATE_LIMIT_BAND

DECOYS: Final = {"easy": (1, 2), "medium": (2, 4), "hard": (4, 7)}
"""How many unusual values a world gets, by the tier of the task placed in it (a range, drawn):
harder tasks hide their fault among more of them."""
MOVABLE_SERVERS: Final = {"db": ("db.port", ("auth", "payments")), "cache": ("cache.port", ("payments",))}
"""Servers a decoy may move to another port: (the clients' port key, the clients)."""

Config = MutableMapping[str, MutableMapping[str, Value]]


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


def candidates(config: Config, load: Baseline) -> list[Decoy]:
    """Every decoy this world can take, with its value drawn from the world's load."""

    def current(s: str, k: str) -> int:
        return int(config[s].get(k, BASE_FILES[s].values[k]))

    out: list[Decoy] = []
    for edge in topo.EDGES:
        typical = _typical(edge.client, edge.timeout_key)
        floor = 2 * load.p99[edge.server]
        out.append(Decoy(edge.client, edge.timeout_key, lambda r, t=typical: min(20000, _up(t * _spread(r, 3, 15), 10))))
        out.append(Decoy(edge.client, edge.timeout_key, lambda r, f=floor: _up(f * _spread(r, 1.15, 1.6), 10)))
    for s in ("auth", "payments"):
        need = load.pool_needed[s]
        out.append(Decoy(s, "db.pool_max", lambda r, n=need: min(200, _up(n * _spread(r, 3, 12), 1))))
        out.append(Decoy(s, "db.pool_max", lambda r, n=need: n + r.randint(1, 2)))
    for s in ("gateway", "auth", "payments"):
        out.append(Decoy(s, "deploy.replicas", lambda r: r.randint(8, 10)))
    limits = {
        ("gateway", "ratelimit.requests_per_second"): load.k10_min_rps,
        ("gateway", "ratelimit.checkout_rps"): load.k10_min_checkout_rps,
        ("auth", "ratelimit.login_per_minute"): load.k10_min_login_per_minute,
    }
    for (s, key), need_f in limits.items():
        cap = RATE_LIMIT_BAND[key] // 2
        out.append(Decoy(s, key, lambda r, n=need_f, c=cap: min(c, _up(n * _spread(r, 4, 20), 10))))
        out.append(Decoy(s, key, lambda r, n=need_f: _up(n * r.uniform(1.05, 1.12), 10)))
    for s in topo.SERVICES:
        cpu, need = current(s, "resources.cpu_limit_millicores"), load.cpu_needed[s]
        out.append(Decoy(s, "resources.cpu_limit_millicores", lambda r, c=cpu: min(16000, _up(c * _spread(r, 2.5, 10), 100))))
        out.append(Decoy(s, "resources.cpu_limit_millicores", lambda r, n=need: _up(n * r.uniform(1.08, 1.18), 100)))
        memory = current(s, "resources.memory_limit_mb")
        out.append(Decoy(s, "resources.memory_limit_mb", lambda r, m=memory: min(65536, _up(m * _spread(r, 3, 12), 256))))
        if s != "db":
            out.append(Decoy(s, "logging.retention_days", lambda r: r.choice((1, 2, _up(_spread(r, 90, 1500), 1)))))
    out.append(Decoy("cache", "memory.maxmemory_mb", lambda r: _up(_spread(r, 1600, 4096), 64)))
    out.append(Decoy("cache", "memory.maxmemory_mb", lambda r: _up(topo.CACHE_WORKING_SET_MB * r.uniform(1.03, 1.2), 8)))
    out.append(Decoy("cache", "keys.default_ttl_s", lambda r: _up(_spread(r, 1800, 86400), 60)))
    out.append(Decoy("cache", "keys.default_ttl_s", lambda r: r.randrange(60, 100, 5)))
    # db logs fill its disk at 393 days (the rule warns from 322): a long retention short of that
    out.append(Decoy("db", "logging.retention_days", lambda r: r.choice((1, 2, 3, r.randint(150, 320)))))
    out.append(Decoy("db", "logging.slow_query_ms", lambda r: _up(r.choice((_spread(r, 1, 60), _spread(r, 3000, 60000))), 1)))
    out.append(Decoy("db", "server.max_connections", lambda r: 0))  # sized by :func:`apply`
    for s in ("gateway", "auth", "payments"):
        out.append(Decoy(s, "resolver.nameserver", lambda r: 0))  # a rarer resolver, see apply
    for server in MOVABLE_SERVERS:
        out.append(Decoy(server, "server.port", lambda r: r.choice((-2, -1, 1, 2, 3, 10, 100))))  # an offset
    return out


def apply(decoy: Decoy, rng: random.Random, config: Config, ports: MutableMapping[str, int]) -> None:
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
        value = rng.choice((needed + rng.randint(1, 4), min(1900, _up(needed * _spread(rng, 3, 12), 10))))
    config[decoy.service][decoy.key] = value


def connections_needed(config: Mapping[str, Mapping[str, Value]]) -> int:
    """The db connections the clients' pools can open, plus the reserved ones (K04)."""

    def get(s: str, k: str) -> int:
        return int(config[s].get(k, BASE_FILES[s].values[k]))

    pools = sum(get(s, "deploy.replicas") * get(s, "db.pool_max") for s in ("auth", "payments"))
    return pools + topo.DB_CONNECTION_RESERVE
