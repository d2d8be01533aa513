"""The distribution of base worlds (docs/environment.md §6.15): every task starts from its own
system.

A world is drawn from a seed in passes. First the values that set the load and the shape of
the system: traffic (a factor of five across worlds), replicas, ports, versions and their deploy
history, certificate names and dates, memory limits, cache sizing, and the harmless settings (log
levels, retention, TLS floor, nameserver); rate limits from the traffic, then CPU limits from the
load they let in. Then the limits that must sit above what that load needs (db pools,
``max_connections``) are drawn as a margin over the thresholds the world's own baseline derives,
and timeouts around their typical values. Last come a few unusual but harmless values
(:mod:`srez_env.generator.unusual`), each kept only if the world stays healthy. No rule fires and
every SLO holds before the incident; :func:`draw_world` checks both before returning a world.

Nothing here reads a task's ground truth: the same seed gives the same world for any task.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final

from srez_env.generator import unusual
from srez_env.sim.baseline import CANONICAL, Baseline, base_inputs, baseline_of
from srez_env.sim.engine import evaluate
from srez_env.sim.rules import firing
from srez_env.task_world import CertEntry, DeployedVersion, WorldSpec
from srez_env.telemetry.status import slo_holds
from srez_env.world import topology as topo
from srez_env.world.base import expected_subject
from srez_env.world.conffile import Value, parse_value, render_value
from srez_env.world.schema import BASE_FILES

GENERATOR: Final = "srez-worlds/2"
"""The generator's name and version, recorded in every task's ``world`` block and in run.json.
Bump the version whenever a change here would draw a different world from the same seed."""

_HTTP_PORTS: Final = (8080, 8000, 8443, 9000)
_DB_PORTS: Final = (5432, 6432, 15432)
_CACHE_PORTS: Final = (6379, 7000, 16379)
_PORT_OFFSETS: Final = (0, 0, 0, 1, 2)
_REPLICAS: Final = {"gateway": (3, 4), "auth": (3, 4), "payments": (4, 5, 6)}
_MEMORY: Final = {
    "gateway": (768, 1024, 1536),
    "auth": (1024, 1536),
    "payments": (2048, 3072),
    "cache": (1024, 1536),
    "db": (8192, 12288),
}
_CERT_NAMES: Final = ("{s}-{y}.pem", "{s}.{y}.pem", "{s}_{y}.pem", "{s}-tls-{y}.pem")
INGRESS_LOW: Final = 200.0
INGRESS_HIGH: Final = 1000.0
"""The range of a world's traffic at the gateway (req/s), drawn log-uniformly."""
TYPICAL_PORTS: Final = {"http": 8080, "db": 5432, "cache": 6379}
"""The ports of the typical world, by server (``http`` is auth's and payments')."""


@dataclass(frozen=True, slots=True)
class WorldDraw:
    """One drawn world, plus the maps from the typical world's names into it."""

    seed: int
    spec: WorldSpec
    baseline: Baseline
    ports: Mapping[str, int]
    """``http``, ``db`` and ``cache``: the ports the servers listen on."""
    versions: Mapping[str, Mapping[str, str]]
    """Per service, typical version name -> this world's (for any version of that line)."""
    cert_files: Mapping[str, str]
    """Typical certificate file name (``db-2024.pem``) -> this world's."""
    decoys: tuple[str, ...] = ()
    """The unusual but harmless values the world carries, as ``service:key``."""

    def value(self, service: str, key: str) -> Value:
        """A base configuration value of this world."""
        raw = self.spec.config.get(service, {}).get(key)
        return BASE_FILES[service].values[key] if raw is None else parse_value(raw)


def map_version(shift: tuple[int, int], name: str) -> str:
    """Shifts a version's first two numbers (``2.4.1`` with (1, 2) -> ``3.6.1``)."""
    parts = name.split(".")
    parts[0] = str(int(parts[0]) + shift[0])
    if len(parts) > 1:
        parts[1] = str(int(parts[1]) + shift[1])
    return ".".join(parts)


def draw_world(
    seed: int,
    t0: datetime,
    extra_versions: Mapping[str, set[str]],
    decoys: tuple[int, int] = unusual.DECOYS["medium"],
) -> WorldDraw:
    """Draws the world of ``seed``; ``extra_versions`` are the typical names (per service) that
    the task adds to the registry, so the version map covers them too; ``decoys`` is the range
    of unusual values the world gets (:data:`unusual.DECOYS`).

    Raises:
        ValueError: if the drawn world is not healthy before the incident (never expected; the
            draw is built to avoid it).
    """
    rng = random.Random(f"srez-world:{seed}")
    config: dict[str, dict[str, Value]] = {s: {} for s in topo.SERVICES}
    # A port is a well-known one or a few above it, so the port next to a server's (what a
    # mistyped client points at) is where some healthy world's server listens.
    ports = {
        "http": rng.choice(_HTTP_PORTS) + rng.choice(_PORT_OFFSETS),
        "db": rng.choice(_DB_PORTS) + rng.choice(_PORT_OFFSETS),
        "cache": rng.choice(_CACHE_PORTS) + rng.choice(_PORT_OFFSETS),
    }
    for s in ("auth", "payments"):
        config[s]["server.port"] = ports["http"]
    config["db"]["server.port"] = ports["db"]
    config["cache"]["server.port"] = ports["cache"]
    for s in ("gateway", "payments"):
        config[s]["upstream.auth.port"] = ports["http"]
    config["gateway"]["upstream.payments.port"] = ports["http"]
    for s in ("auth", "payments"):
        config[s]["db.port"] = ports["db"]
    config["payments"]["cache.port"] = ports["cache"]

    for s, choices in _REPLICAS.items():
        config[s]["deploy.replicas"] = rng.choice(choices)
    for s, choices in _MEMORY.items():
        config[s]["resources.memory_limit_mb"] = rng.choice(choices)
    for s in topo.SERVICES:
        config[s]["logging.level"] = rng.choice(("info", "info", "notice", "warn"))
        if s != "db":
            config[s]["logging.retention_days"] = rng.choice((3, 7, 14, 30))
        if "resolver.nameserver" in BASE_FILES[s].values:
            config[s]["resolver.nameserver"] = rng.choice(topo.USUAL_NAMESERVERS)
    config["db"]["logging.retention_days"] = rng.choice((7, 14, 30, 45))
    config["db"]["logging.slow_query_ms"] = rng.choice((250, 500, 1000))
    config["gateway"]["tls.min_version"] = rng.choice(("TLS1.2", "TLS1.3"))
    config["cache"]["memory.maxmemory_mb"] = rng.choice((448, 512, 640, 768, 1024))
    config["cache"]["keys.default_ttl_s"] = rng.choice((120, 180, 300, 600, 900))
    config["cache"]["memory.eviction_policy"] = rng.choice(("allkeys-lru", "volatile-lru"))
    # Traffic spans a factor of five across worlds, so a limit that is healthy in one world is
    # too low in a busier one: no absolute range tells a bad limit from a good one.
    ingress = float(round(math.exp(rng.uniform(math.log(INGRESS_LOW), math.log(INGRESS_HIGH))), -1))
    # The rate limits depend on the traffic alone, and everything below on what they let in.
    limits = baseline_of(_running(config), ingress)
    config["gateway"]["ratelimit.requests_per_second"] = int(
        round(limits.k10_min_rps * rng.uniform(1.4, 2.2), -1)
    )
    config["gateway"]["ratelimit.checkout_rps"] = int(
        round(limits.k10_min_checkout_rps * rng.uniform(1.3, 2.0), -1)
    )
    config["auth"]["ratelimit.login_per_minute"] = int(
        round(limits.k10_min_login_per_minute * rng.uniform(1.4, 2.2), -2)
    )
    # CPU follows the load: each service's limit keeps the typical world's headroom over what
    # this world's traffic needs, give or take.
    load = baseline_of(_running(config), ingress)  # demand does not depend on the CPU limits
    for s in topo.SERVICES:
        typical = int(BASE_FILES[s].values["resources.cpu_limit_millicores"])
        headroom = load.cpu_needed[s] / CANONICAL.cpu_needed[s]
        scaled = typical * headroom * rng.uniform(0.9, 1.3)
        config[s]["resources.cpu_limit_millicores"] = int(min(16000, max(100, round(scaled, -2))))

    # Second pass: limits as margins over what this world's load needs (§6.1 thresholds).
    rough = baseline_of(_running(config), ingress)
    for s in ("auth", "payments"):
        config[s]["db.pool_max"] = max(
            rough.pool_needed[s] + 2, round(rough.pool_needed[s] * rng.uniform(1.2, 2.4))
        )
    pools = sum(
        int(config[s]["deploy.replicas"]) * int(config[s]["db.pool_max"])
        for s in ("auth", "payments")
    )
    needed = pools + topo.DB_CONNECTION_RESERVE
    config["db"]["server.max_connections"] = int(round(needed * rng.uniform(1.15, 1.6), -1))
    for edge in topo.EDGES:
        typical = int(BASE_FILES[edge.client].values[edge.timeout_key])
        config[edge.client][edge.timeout_key] = int(round(typical * rng.uniform(0.8, 1.5), -1))

    shifts = {s: (rng.choice((0, 0, 1)), rng.randrange(0, 4)) for s in topo.SERVICES}
    history: dict[str, list[DeployedVersion]] = {}
    version_maps: dict[str, dict[str, str]] = {}
    for s in topo.SERVICES:
        names = [name for name, _ in topo.BASE_REGISTRY[s]]
        version_maps[s] = {
            name: map_version(shifts[s], name) for name in {*names, *extra_versions.get(s, ())}
        }
        ages = [
            max(3, before // topo.DAY + rng.randint(-2, 3)) for _, before in topo.BASE_REGISTRY[s]
        ]
        history[s] = [
            DeployedVersion(version=version_maps[s][name], minutes_before=age * topo.DAY)
            for name, age in zip(names, _strictly_decreasing(ages), strict=True)
        ]

    pattern = rng.choice(_CERT_NAMES)
    valid_days = rng.randrange(120, 400)
    expired_days = rng.randrange(2, 30)
    cert_files: dict[str, str] = {}
    certs = []
    for s in topo.TLS_SERVERS:
        for year, days in (("2025", valid_days), ("2024", -expired_days)):
            name = pattern.format(s=s, y=year)
            cert_files[f"{s}-{year}.pem"] = name
            certs.append(
                CertEntry(
                    path=f"/etc/certs/{name}",
                    not_after=t0 + timedelta(days=days),
                    subject=expected_subject(s),
                )
            )
    for s in topo.TLS_SERVERS:
        config[s]["tls.cert_file"] = f"/etc/certs/{cert_files[f'{s}-2025.pem']}"

    kept = _add_decoys(rng, config, ports, ingress, rng.randint(*decoys))

    overrides = {
        s: {k: render_value(v) for k, v in sorted(values.items()) if v != BASE_FILES[s].values[k]}
        for s, values in config.items()
    }
    spec = WorldSpec(
        generator=GENERATOR,
        seed=seed,
        ingress_rps=ingress,
        config={s: v for s, v in overrides.items() if v},
        versions=history,
        certs=certs,
    )
    base = spec.base_world(t0)
    baseline = baseline_of({s: f.values for s, f in base.files.items()}, ingress)
    running = {s: f.values for s, f in base.files.items()}
    fired = firing(running, {}, base.certs, base.subjects, 0, baseline)
    if fired or not _healthy(baseline, running):
        msg = f"world {seed}: unhealthy before the incident ({', '.join(map(str, fired))})"
        raise ValueError(msg)
    return WorldDraw(
        seed=seed,
        spec=spec,
        baseline=baseline,
        ports=ports,
        versions=version_maps,
        cert_files=cert_files,
        decoys=tuple(kept),
    )


def _add_decoys(
    rng: random.Random,
    config: dict[str, dict[str, Value]],
    ports: dict[str, int],
    ingress: float,
    count: int,
) -> list[str]:
    """Adds ``count`` unusual but harmless values (:mod:`srez_env.generator.unusual`), each
    kept only if the world stays healthy with it (else the next candidate is tried); the db's connection limit follows the pools.
    Returns the kept ones as ``service:key``."""
    menu = unusual.candidates(config, baseline_of(_running(config), ingress))
    kept: list[str] = []
    for decoy in rng.sample(menu, len(menu)):  # in a drawn order, until ``count`` are kept
        if len(kept) == count:
            break
        before = {s: dict(values) for s, values in config.items()}
        kept_ports = dict(ports)
        unusual.apply(decoy, rng, config, ports)
        needed = unusual.connections_needed(_running(config))
        if decoy.key != "server.max_connections" and needed > int(
            _running(config)["db"]["server.max_connections"]
        ):
            config["db"]["server.max_connections"] = int(round(needed * rng.uniform(1.15, 1.6), -1))
        running = _running(config)
        baseline = baseline_of(running, ingress)
        if (
            unusual.near_a_band(running, baseline)
            or _rules_fire(running, baseline)
            or not _healthy(baseline, running)
        ):
            config.clear()
            config.update(before)
            ports.clear()
            ports.update(kept_ports)
        else:
            kept.append(f"{decoy.service}:{decoy.key}")
    return kept


def _rules_fire(running: Mapping[str, Mapping[str, Value]], baseline: Baseline) -> bool:
    """Any rule but the certificates' fires (every certificate counts as valid here)."""
    paths = {str(running[s]["tls.cert_file"]) for s in topo.TLS_SERVERS}
    certs = dict.fromkeys(paths, 365 * topo.DAY)
    subjects = {str(running[s]["tls.cert_file"]): expected_subject(s) for s in topo.TLS_SERVERS}
    return bool(firing(running, {}, certs, subjects, 0, baseline))


def _healthy(baseline: Baseline, running: Mapping[str, Mapping[str, Value]]) -> bool:
    """The SLO holds and every service is healthy in the fault-free minute."""
    inputs = replace(base_inputs(running, baseline.ingress_rps), p99_base=baseline.p99)
    return slo_holds(evaluate(inputs))


def _strictly_decreasing(ages: list[int]) -> list[int]:
    out: list[int] = []
    for age in ages:
        out.append(age if not out or age < out[-1] else out[-1] - 1)
    return out


def _running(config: Mapping[str, Mapping[str, Value]]) -> dict[str, dict[str, Value]]:
    return {s: {**BASE_FILES[s].values, **config[s]} for s in topo.SERVICES}
