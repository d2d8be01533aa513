"""The 14 health rules: one pure predicate per kind of the fault catalogue (docs/environment.md
§6.3; :mod:`srez_env.catalogue` holds each kind's entry, this module its predicate, registered by
the kind's name with :func:`rule`).

A rule reads only the running config, the running versions' props, the certificate catalogue, the
minute and the world's constants (:class:`srez_env.sim.baseline.Baseline`); never engine output.
Rules drive grading (``intent`` and the ``fix`` component): any change that clears the rule fixes
the fault, and a collateral edit can make another rule fire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Final, NamedTuple

from srez_env.sim.baseline import Baseline
from srez_env.sim.engine import Config, flag, num
from srez_env.world import topology as topo
from srez_env.world.base import expected_subject

BAD_FLAGS: Final = {
    "payments": "flags.new_fraud_check",
    "auth": "flags.strict_audience",
    "gateway": "flags.request_mirroring",
}
DB_CLIENTS: Final = ("auth", "payments")
"""The services holding a db connection pool."""
RESOLVING: Final = ("gateway", "auth", "payments")
"""The services that resolve their dependencies' names (the cache and the db call nobody)."""


class RuleHit(NamedTuple):
    """One firing rule instance: the fault kind and where (a service, or ``client->server``)."""

    kind: str
    where: str

    def __str__(self) -> str:
        return f"{self.kind}@{self.where}"


def cache_hit_ratio(cache: Config) -> float:
    """The hit ratio the cache's memory and TTL settings allow (working set 350 MB)."""
    by_memory = min(1.0, num(cache, "memory.maxmemory_mb") / topo.CACHE_WORKING_SET_MB)
    by_ttl = min(1.0, num(cache, "keys.default_ttl_s") / 60.0)
    return 0.94 * by_memory * by_ttl


def disk_used_pct(db: Config) -> float:
    """db's disk use: 45 % plus the logs kept (0.14 % a day)."""
    return min(100.0, 45 + 0.14 * num(db, "logging.retention_days"))


class RuleInputs(NamedTuple):
    """What every rule may read (and nothing else: never engine output)."""

    running: Mapping[str, Config]
    props: Mapping[str, Mapping[str, float | str]]
    cert_not_after: Mapping[str, int]
    cert_subjects: Mapping[str, str]
    minute: int
    base: Baseline


Rule = Callable[[RuleInputs], Iterator[str]]
"""A kind's predicate: yields where it fires (a service, or ``client->server``)."""
RULES: Final[dict[str, Rule]] = {}
"""Each fault kind's rule, registered under the catalogue's name (srez_env.catalogue); a test
holds the two to the same kinds."""


def rule(kind: str) -> Callable[[Rule], Rule]:
    """Registers the decorated predicate as ``kind``'s rule."""

    def register(check: Rule) -> Rule:
        RULES[kind] = check
        return check

    return register


@rule("wrong_upstream_port")
def _wrong_upstream_port(w: RuleInputs) -> Iterator[str]:
    for e in topo.EDGES:
        if w.running[e.client][e.port_key] != w.running[e.server]["server.port"]:
            yield f"{e.client}->{e.server}"


@rule("expired_tls_cert")
def _expired_tls_cert(w: RuleInputs) -> Iterator[str]:
    """Fires for a TLS server whose running certificate expires within the soak or was issued to
    another name: every client of these services verifies TLS, so either one fails the handshake
    (a certificate renewed with another service's file is not a fix)."""
    for s in topo.TLS_SERVERS:
        path = str(w.running[s]["tls.cert_file"])
        expiring = w.cert_not_after[path] <= w.minute + topo.SOAK_MINUTES
        wrong_name = w.cert_subjects[path] != expected_subject(s)
        if flag(w.running[s], "tls.enabled") and (expiring or wrong_name):
            yield s


@rule("conn_pool_exhaustion")
def _conn_pool_exhaustion(w: RuleInputs) -> Iterator[str]:
    for s in DB_CLIENTS:
        if num(w.running[s], "db.pool_max") < w.base.pool_needed[s]:
            yield s


@rule("db_max_connections_low")
def _db_max_connections_low(w: RuleInputs) -> Iterator[str]:
    c = w.running
    pools = sum(num(c[s], "deploy.replicas") * num(c[s], "db.pool_max") for s in DB_CLIENTS)
    if num(c["db"], "server.max_connections") < pools + topo.DB_CONNECTION_RESERVE:
        yield "db"


@rule("memory_leak")
def _memory_leak(w: RuleInputs) -> Iterator[str]:
    for s in topo.SERVICES:
        if float(w.props.get(s, {}).get("leak_mb_per_min", 0)) > 0:
            yield s


@rule("bad_deploy")
def _bad_deploy(w: RuleInputs) -> Iterator[str]:
    for s in topo.SERVICES:
        p = w.props.get(s, {})
        if float(p.get("error_rate", 0)) > 0 or float(p.get("query_mult", 1)) > 1:
            yield s


@rule("disk_full")
def _disk_full(w: RuleInputs) -> Iterator[str]:
    if disk_used_pct(w.running["db"]) >= 90:
        yield "db"


@rule("dns_misconfig")
def _dns_misconfig(w: RuleInputs) -> Iterator[str]:
    for s in RESOLVING:
        if w.running[s]["resolver.nameserver"] not in topo.GOOD_NAMESERVERS:
            yield s


@rule("cache_eviction_stampede")
def _cache_eviction_stampede(w: RuleInputs) -> Iterator[str]:
    if cache_hit_ratio(w.running["cache"]) < 0.85:
        yield "cache"


@rule("rate_limit_misconfig")
def _rate_limit_misconfig(w: RuleInputs) -> Iterator[str]:
    gw, au, base = w.running["gateway"], w.running["auth"], w.base
    if flag(gw, "ratelimit.enabled") and (
        num(gw, "ratelimit.requests_per_second") < base.k10_min_rps
        or num(gw, "ratelimit.checkout_rps") < base.k10_min_checkout_rps
    ):
        yield "gateway"
    if flag(au, "ratelimit.enabled") and (
        num(au, "ratelimit.login_per_minute") < base.k10_min_login_per_minute
    ):
        yield "auth"


@rule("feature_flag_regression")
def _feature_flag_regression(w: RuleInputs) -> Iterator[str]:
    for s, key in BAD_FLAGS.items():
        if flag(w.running[s], key):
            yield s


@rule("dependency_timeout")
def _dependency_timeout(w: RuleInputs) -> Iterator[str]:
    for e in topo.EDGES:
        if not e.soft and num(w.running[e.client], e.timeout_key) < 2 * w.base.p99[e.server]:
            yield f"{e.client}->{e.server}"


@rule("replicas_zero")
def _replicas_zero(w: RuleInputs) -> Iterator[str]:
    for s in topo.SERVICES:
        if num(w.running[s], "deploy.replicas") < topo.MIN_REPLICAS[s]:
            yield s


@rule("cpu_throttling")
def _cpu_throttling(w: RuleInputs) -> Iterator[str]:
    for s in topo.SERVICES:
        if num(w.running[s], "resources.cpu_limit_millicores") < w.base.cpu_needed[s]:
            yield s


def firing(
    running: Mapping[str, Config],
    props: Mapping[str, Mapping[str, float | str]],
    cert_not_after: Mapping[str, int],
    cert_subjects: Mapping[str, str],
    minute: int,
    base: Baseline,
) -> list[RuleHit]:
    """Every firing rule instance, sorted."""
    inputs = RuleInputs(running, props, cert_not_after, cert_subjects, minute, base)
    return sorted(RuleHit(kind, where) for kind, check in RULES.items() for where in check(inputs))
