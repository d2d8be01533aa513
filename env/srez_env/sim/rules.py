"""The 14 health rules: pure predicates that are the fault catalogue (docs/environment.md §6.3).

A rule reads only the running config, the running versions' props, the certificate catalogue, the
minute and the world's constants (:class:`srez_env.sim.baseline.Baseline`); never engine output. Rules drive grading
(``intent`` and the ``fix`` component): any change that clears the rule fixes the fault, and a
collateral edit can make another rule fire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, NamedTuple

from srez_env.sim.baseline import Baseline
from srez_env.sim.engine import Config, flag, num
from srez_env.world import topology as topo
from srez_env.world.base import expected_subject

KIND_CODES: Final = {
    "wrong_upstream_port": "K01",
    "expired_tls_cert": "K02",
    "conn_pool_exhaustion": "K03",
    "db_max_connections_low": "K04",
    "memory_leak": "K05",
    "bad_deploy": "K06",
    "disk_full": "K07",
    "dns_misconfig": "K08",
    "cache_eviction_stampede": "K09",
    "rate_limit_misconfig": "K10",
    "feature_flag_regression": "K11",
    "dependency_timeout": "K12",
    "replicas_zero": "K13",
    "cpu_throttling": "K14",
}
BAD_FLAGS: Final = {
    "payments": "flags.new_fraud_check",
    "auth": "flags.strict_audience",
    "gateway": "flags.request_mirroring",
}


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


def firing(
    running: Mapping[str, Config],
    props: Mapping[str, Mapping[str, float | str]],
    cert_not_after: Mapping[str, int],
    cert_subjects: Mapping[str, str],
    minute: int,
    base: Baseline,
) -> list[RuleHit]:
    """Every firing rule instance, sorted.

    K02 fires for a TLS server whose running certificate expires within the soak or was issued
    to another name: every client of these services verifies TLS, so either one fails the
    handshake (a certificate renewed with another service's file is not a fix).
    """
    c = running
    hits: list[RuleHit] = []
    for e in topo.EDGES:
        if c[e.client][e.port_key] != c[e.server]["server.port"]:
            hits.append(RuleHit("wrong_upstream_port", f"{e.client}->{e.server}"))
    for s in topo.TLS_SERVERS:
        path = str(c[s]["tls.cert_file"])
        expiring = cert_not_after[path] <= minute + topo.SOAK_MINUTES
        if flag(c[s], "tls.enabled") and (expiring or cert_subjects[path] != expected_subject(s)):
            hits.append(RuleHit("expired_tls_cert", s))
    for s in ("payments", "auth"):
        if num(c[s], "db.pool_max") < base.pool_needed[s]:
            hits.append(RuleHit("conn_pool_exhaustion", s))
    pools = sum(
        num(c[s], "deploy.replicas") * num(c[s], "db.pool_max") for s in ("auth", "payments")
    )
    if num(c["db"], "server.max_connections") < pools + topo.DB_CONNECTION_RESERVE:
        hits.append(RuleHit("db_max_connections_low", "db"))
    for s in topo.SERVICES:
        p = props.get(s, {})
        if float(p.get("leak_mb_per_min", 0)) > 0:
            hits.append(RuleHit("memory_leak", s))
        if float(p.get("error_rate", 0)) > 0 or float(p.get("query_mult", 1)) > 1:
            hits.append(RuleHit("bad_deploy", s))
    if disk_used_pct(c["db"]) >= 90:
        hits.append(RuleHit("disk_full", "db"))
    for s in ("gateway", "auth", "payments"):
        if c[s]["resolver.nameserver"] not in topo.GOOD_NAMESERVERS:
            hits.append(RuleHit("dns_misconfig", s))
    if cache_hit_ratio(c["cache"]) < 0.85:
        hits.append(RuleHit("cache_eviction_stampede", "cache"))
    gw = c["gateway"]
    if flag(gw, "ratelimit.enabled") and (
        num(gw, "ratelimit.requests_per_second") < base.k10_min_rps
        or num(gw, "ratelimit.checkout_rps") < base.k10_min_checkout_rps
    ):
        hits.append(RuleHit("rate_limit_misconfig", "gateway"))
    au = c["auth"]
    if flag(au, "ratelimit.enabled") and (
        num(au, "ratelimit.login_per_minute") < base.k10_min_login_per_minute
    ):
        hits.append(RuleHit("rate_limit_misconfig", "auth"))
    for s, key in BAD_FLAGS.items():
        if flag(c[s], key):
            hits.append(RuleHit("feature_flag_regression", s))
    for e in topo.EDGES:
        if e.soft:
            continue
        if num(c[e.client], e.timeout_key) < 2 * base.p99[e.server]:
            hits.append(RuleHit("dependency_timeout", f"{e.client}->{e.server}"))
    for s in topo.SERVICES:
        if num(c[s], "deploy.replicas") < topo.MIN_REPLICAS[s]:
            hits.append(RuleHit("replicas_zero", s))
    for s in topo.SERVICES:
        if num(c[s], "resources.cpu_limit_millicores") < base.cpu_needed[s]:
            hits.append(RuleHit("cpu_throttling", s))
    return sorted(hits)
