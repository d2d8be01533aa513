"""One minute of the simulated system, in closed form (docs/environment.md §6.2 and §6.4).

:func:`evaluate` is a pure function of :class:`MinuteInputs`: no iteration, no randomness, no
clock. Demand flows top-down (gateway -> auth, payments -> cache, db); capacity, latency and
errors are then computed bottom-up (db, cache, auth, payments, gateway). Latency is an exponential
*body* (mean ``mu``) plus *stalls*: masses of requests that wait for a timeout, inherited by callers
and capped at the caller's timeout; p99 is the larger of the body's p99 and the slowest stall that
still holds 1 % of requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from srez_env.sim.latency import (
    Stall,
    fail_open_mass,
    inherit,
    p99_of,
    p_timeout,
    truncated_mean,
)
from srez_env.world import topology as topo
from srez_env.world.conffile import Value

Conn = Literal["no_endpoints", "dns", "refused", "tls"] | None
Config = Mapping[str, Value]


@dataclass(frozen=True, slots=True)
class MinuteInputs:
    """Everything one minute depends on, already resolved from the timeline."""

    running: Mapping[str, Config]
    props: Mapping[str, Mapping[str, float | str]]  # the running version's props per service
    cert_rejected: Mapping[str, bool]
    killed: Mapping[str, int]  # replicas OOM-killed this minute
    restarting: Mapping[str, int]  # replicas out for a restart blip this minute
    extra_rps: Mapping[str, float]
    lat_mult: Mapping[str, float]
    memory_mb: Mapping[str, float]  # mean replica memory
    ingress_rps: float = topo.INGRESS_RPS  # the world's traffic level
    p99_base: Mapping[str, float] = field(default_factory=dict)  # carried to the snapshot


@dataclass(slots=True)
class ServiceState:
    """The engine's output for one service (noise-free)."""

    rps: float = 0.0
    u: float = 0.0
    own_ms: float = 0.0
    mu_ms: float = 0.0
    err: float = 0.0
    over: float = 0.0
    ready: int = 0
    p99_ms: float = 0.0
    cpu_pct: float = 0.0
    mem_pct: float = 0.0
    stalls: list[Stall] = field(default_factory=list)
    extra: dict[str, float] = field(default_factory=dict)  # service-specific metrics


@dataclass(slots=True)
class Snapshot:
    """One evaluated minute: per-service states plus the internals the log templates need."""

    services: dict[str, ServiceState]
    conn: dict[tuple[str, str], Conn]
    r1: float = 0.0
    r2: float = 0.0
    pool_err: dict[str, float] = field(default_factory=dict)
    refused: float = 0.0
    rej_login: float = 0.0
    rej_401: float = 0.0
    disk_full: bool = False
    hit_cfg: float = 0.0
    ingress_rps: float = topo.INGRESS_RPS
    p99_base: Mapping[str, float] = field(default_factory=dict)
    """The world's baseline p99 per service (the status and alert thresholds compare with it)."""
    route_err: dict[str, float] = field(default_factory=dict)
    """The share of each user route's requests (``signin``, ``checkout``) that fail at the edge."""

    def __getitem__(self, service: str) -> ServiceState:
        return self.services[service]


def num(cfg: Config, key: str) -> float:
    """A numeric config value (ints are stored as ints; booleans are not numbers here)."""
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"config key {key} is {value!r}, not a number"
        raise TypeError(msg)
    return float(value)


def flag(cfg: Config, key: str, default: bool = False) -> bool:
    """A boolean config value; ``default`` when the file has no such key."""
    return bool(cfg.get(key, default))


def _queue(ready: int, demand: float, service: str, cfg: Config, lat_mult: float) -> ServiceState:
    cap = ready * topo.PER_REPLICA_RPS[service] * num(cfg, "resources.cpu_limit_millicores")
    cap /= topo.CPU_BASE_M[service]
    u = demand / cap if cap > 0 else 0.0
    over = max(0.0, 1 - 1 / u) if u > 1 else 0.0
    own = topo.BASE_MS[service] / (1 - min(u, 0.95)) * lat_mult
    return ServiceState(rps=demand, u=u, own_ms=own, mu_ms=own, over=over, ready=ready)


def evaluate(inp: MinuteInputs) -> Snapshot:
    """Evaluates one minute; see the module docstring and docs/environment.md §6.2."""
    c = inp.running
    ready = {
        s: max(
            0, int(num(c[s], "deploy.replicas")) - inp.killed.get(s, 0) - inp.restarting.get(s, 0)
        )
        for s in topo.SERVICES
    }

    def connect(e: topo.Edge) -> Conn:
        src, dst = c[e.client], c[e.server]
        if ready[e.server] <= 0:
            return "no_endpoints"
        if src["resolver.nameserver"] not in topo.GOOD_NAMESERVERS:
            return "dns"
        if src[e.port_key] != dst["server.port"]:
            return "refused"
        tls_on = flag(dst, "tls.enabled")
        if (
            inp.cert_rejected.get(e.server, False)
            and tls_on
            and flag(src, f"{e.server}.tls_verify", True)
        ):
            return "tls"
        return None

    conn = {(e.client, e.server): connect(e) for e in topo.EDGES}
    ok = {pair: state is None for pair, state in conn.items()}
    gw, au, pa, ca, db = (c[s] for s in topo.SERVICES)
    snap = Snapshot(services={}, conn=conn, ingress_rps=inp.ingress_rps, p99_base=inp.p99_base)

    # 1. demand, top-down: reachability, rate limits and pools only.
    gw_tls = inp.cert_rejected.get("gateway", False) and flag(gw, "tls.enabled")
    limiting = flag(gw, "ratelimit.enabled")
    r1 = (
        max(0.0, 1 - num(gw, "ratelimit.requests_per_second") / inp.ingress_rps)
        if limiting
        else 0.0
    )
    auth_route = 0.0 if gw_tls else inp.ingress_rps * topo.AUTH_ROUTE_SHARE * (1 - r1)
    checkout = 0.0 if gw_tls else inp.ingress_rps * topo.CHECKOUT_ROUTE_SHARE * (1 - r1)
    r2 = 0.0
    if limiting and checkout > 0:
        r2 = max(0.0, 1 - num(gw, "ratelimit.checkout_rps") / checkout)
    mirror = topo.MIRROR_FACTOR if flag(gw, "flags.request_mirroring") else 1.0
    pay_in = checkout * (1 - r2) * ok["gateway", "payments"] * mirror + inp.extra_rps.get(
        "payments", 0.0
    )
    auth_gw = auth_route * ok["gateway", "auth"]
    auth_in = auth_gw + pay_in * ok["payments", "auth"] + inp.extra_rps.get("auth", 0.0)
    rej_login = 0.0
    if flag(au, "ratelimit.enabled"):
        rej_login = max(
            0.0, topo.LOGIN_SHARE * auth_gw - num(au, "ratelimit.login_per_minute") / 60
        )
    rej_401 = topo.MOBILE_SHARE * auth_gw if flag(au, "flags.strict_audience") else 0.0
    auth_ok = auth_in - rej_login - rej_401

    pool_demand_a = topo.AUTH_DB_SHARE * auth_ok * ok["auth", "db"]
    pool_cap_a = ready["auth"] * num(au, "db.pool_max") / topo.POOL_HOLD_S
    pool_err_a = max(0.0, 1 - pool_cap_a / pool_demand_a) if pool_demand_a > 0 else 0.0
    pool_cap_p = ready["payments"] * num(pa, "db.pool_max") / topo.POOL_HOLD_S
    pool_err_p = 0.0
    if pay_in > 0 and ok["payments", "db"]:
        pool_err_p = max(0.0, 1 - pool_cap_p / pay_in)
    pools = num(au, "deploy.replicas") * num(au, "db.pool_max") * ok["auth", "db"]
    pools += num(pa, "deploy.replicas") * num(pa, "db.pool_max") * ok["payments", "db"]
    budget = num(db, "server.max_connections") - topo.DB_CONNECTION_RESERVE
    refused = max(0.0, 1 - budget / pools) if pools > 0 else 0.0

    cache_ops = topo.CACHE_CALLS * pay_in * ok["payments", "cache"] + inp.extra_rps.get(
        "cache", 0.0
    )
    cache = _queue(ready["cache"], cache_ops, "cache", ca, inp.lat_mult.get("cache", 1.0))
    cache.err = cache.over
    hit_cfg = 0.94 * min(1.0, num(ca, "memory.maxmemory_mb") / topo.CACHE_WORKING_SET_MB)
    hit_cfg *= min(1.0, num(ca, "keys.default_ttl_s") / 60.0)
    hit = 0.0
    if ok["payments", "cache"]:
        hit = (
            hit_cfg * (1 - cache.over) * (1 - p_timeout(num(pa, "cache.timeout_ms"), cache.own_ms))
        )
    q = float(inp.props.get("payments", {}).get("query_mult", 1.0))
    reads_per_req = q * topo.CACHE_CALLS * (1 - hit)
    writes_per_req = q
    pay_connected = pay_in * (1 - pool_err_p) * ok["payments", "db"] * (1 - refused)
    pay_reads = pay_connected * reads_per_req
    pay_writes = pay_connected * topo.PAYMENTS_WRITE_SHARE * writes_per_req
    auth_queries = pool_demand_a * (1 - pool_err_a) * (1 - refused)
    db_extra = inp.extra_rps.get("db", 0.0)
    qps = pay_reads + pay_writes + auth_queries + db_extra

    # 2-4. capacity, latency and errors, bottom-up.
    dbs = _queue(ready["db"], qps, "db", db, inp.lat_mult.get("db", 1.0))
    disk = min(100.0, 45 + 0.14 * num(db, "logging.retention_days"))
    disk_full = disk >= 100
    err_read = dbs.over
    err_write = dbs.over + (1 - dbs.over) * disk_full
    if qps > 0:
        dbs.err = ((pay_reads + auth_queries + db_extra) * err_read + pay_writes * err_write) / qps

    # auth
    ath = _queue(ready["auth"], auth_in, "auth", au, inp.lat_mult.get("auth", 1.0))
    t_ad = num(au, "db.timeout_ms")
    pto_ad = p_timeout(t_ad, dbs.own_ms) if ok["auth", "db"] else 0.0
    f_ad = (
        refused + (1 - refused) * (err_read + (1 - err_read) * pto_ad) if ok["auth", "db"] else 1.0
    )
    db_route = pool_err_a + (1 - pool_err_a) * f_ad
    local_a = 1 - (1 - float(inp.props.get("auth", {}).get("error_rate", 0.0))) * (
        1 - _oom_share(inp, c, "auth")
    )
    err_core = 0.0
    if auth_in > 0:
        err_core = 1 - (1 - local_a) * (1 - ath.over) * (1 - topo.AUTH_DB_SHARE * db_route)
    rejected_share = (rej_login + rej_401) / auth_gw if auth_gw > 0 else 0.0
    err_a_gw = 1 - (1 - rejected_share) * (1 - err_core)  # 429s and 401s hit gateway traffic only
    ath.err = (
        (auth_gw * err_a_gw + (auth_in - auth_gw) * err_core) / auth_in if auth_in > 0 else 0.0
    )
    if ok["auth", "db"]:
        ath.mu_ms += (
            topo.AUTH_DB_SHARE * (1 - pool_err_a) * (1 - refused) * truncated_mean(dbs.own_ms, t_ad)
        )
    if pool_err_a > 0:
        ath.stalls.append(Stall(t_ad, topo.AUTH_DB_SHARE * pool_err_a, True))
    if ok["auth", "db"] and pto_ad > 0:
        mass = topo.AUTH_DB_SHARE * (1 - pool_err_a) * (1 - refused) * pto_ad
        ath.stalls.append(Stall(t_ad + ath.own_ms, mass, True))

    # payments
    pay = _queue(ready["payments"], pay_in, "payments", pa, inp.lat_mult.get("payments", 1.0))
    t_pa, t_pc, t_pd = (
        num(pa, k) for k in ("upstream.auth.timeout_ms", "cache.timeout_ms", "db.timeout_ms")
    )
    pto_pa = p_timeout(t_pa, ath.mu_ms) if ok["payments", "auth"] else 0.0
    f_pa = 1.0
    if ok["payments", "auth"]:
        f_pa = min(1.0, err_core + (1 - err_core) * pto_pa + fail_open_mass(ath.stalls, t_pa))
    pto_pd = p_timeout(t_pd, dbs.own_ms) if ok["payments", "db"] else 0.0
    db_fail = 1.0
    if ok["payments", "db"]:
        f_r = err_read + (1 - err_read) * pto_pd
        f_w = err_write + (1 - err_write) * pto_pd
        read_route = 1 - (1 - f_r) ** reads_per_req
        write_route = 1 - (1 - f_r) ** reads_per_req * (1 - f_w) ** writes_per_req
        share_w = topo.PAYMENTS_WRITE_SHARE
        db_fail = refused + (1 - refused) * ((1 - share_w) * read_route + share_w * write_route)
    fail_p = 1 - (1 - f_pa) * (1 - pool_err_p) * (1 - db_fail)
    local_p = 1 - (1 - float(inp.props.get("payments", {}).get("error_rate", 0.0))) * (
        1 - _oom_share(inp, c, "payments")
    )
    pay.err = 1 - (1 - local_p) * (1 - pay.over) * (1 - fail_p) if pay_in > 0 else 0.0
    db_calls = reads_per_req + topo.PAYMENTS_WRITE_SHARE * writes_per_req
    if ok["payments", "auth"]:
        pay.mu_ms += truncated_mean(ath.mu_ms, t_pa)
    if ok["payments", "cache"]:
        pay.mu_ms += topo.CACHE_CALLS * truncated_mean(cache.own_ms, t_pc)
    if ok["payments", "db"]:
        pay.mu_ms += (1 - pool_err_p) * (1 - refused) * db_calls * truncated_mean(dbs.own_ms, t_pd)
    if pool_err_p > 0:
        pay.stalls.append(Stall(t_pd, pool_err_p, True))
    if ok["payments", "db"] and pto_pd > 0:
        mass = (1 - pool_err_p) * (1 - refused) * (1 - (1 - pto_pd) ** db_calls)
        pay.stalls.append(Stall(t_pd + pay.own_ms, mass, True))
    if ok["payments", "auth"]:
        if pto_pa > 0:
            pay.stalls.append(Stall(t_pa + pay.own_ms, (1 - err_core) * pto_pa, True))
        pay.stalls += inherit(ath.stalls, t_pa, 1.0, pay.own_ms)
    if flag(pa, "flags.new_fraud_check"):  # fail-open: slow, not an error
        pay.stalls.append(Stall(topo.FRAUD_STALL_MS, topo.FRAUD_SHARE, False))

    # gateway
    gws = _queue(
        ready["gateway"],
        0.0 if gw_tls else inp.ingress_rps,
        "gateway",
        gw,
        inp.lat_mult.get("gateway", 1.0),
    )
    t_ga, t_gp = num(gw, "upstream.auth.timeout_ms"), num(gw, "upstream.payments.timeout_ms")
    pto_ga = p_timeout(t_ga, ath.mu_ms) if ok["gateway", "auth"] else 0.0
    pto_gp = p_timeout(t_gp, pay.mu_ms) if ok["gateway", "payments"] else 0.0
    f_ga = f_gp = 1.0
    if ok["gateway", "auth"]:
        f_ga = min(1.0, err_a_gw + (1 - err_a_gw) * pto_ga + fail_open_mass(ath.stalls, t_ga))
    if ok["gateway", "payments"]:
        f_gp = min(1.0, pay.err + (1 - pay.err) * pto_gp + fail_open_mass(pay.stalls, t_gp))
    local_g = 1 - (1 - float(inp.props.get("gateway", {}).get("error_rate", 0.0))) * (
        1 - _oom_share(inp, c, "gateway")
    )
    if gw_tls or ready["gateway"] <= 0:
        # no edge of the topology calls the gateway, so the ingress is what finds it dead: a
        # rejected certificate, or no replica left to take the traffic
        gws.err = 1.0
        snap.route_err = {"signin": 1.0, "checkout": 1.0}
    else:
        f_checkout = r2 + (1 - r2) * f_gp
        route_fail = topo.AUTH_ROUTE_SHARE * f_ga + topo.CHECKOUT_ROUTE_SHARE * f_checkout
        edge_ok = (1 - r1) * (1 - local_g) * (1 - gws.over)
        gws.err = 1 - edge_ok * (1 - route_fail)
        snap.route_err = {
            "signin": 1 - edge_ok * (1 - f_ga),
            "checkout": 1 - edge_ok * (1 - f_checkout),
        }
    checkout_share = topo.CHECKOUT_ROUTE_SHARE * (1 - r2)
    if ok["gateway", "auth"]:
        gws.mu_ms += topo.AUTH_ROUTE_SHARE * truncated_mean(ath.mu_ms, t_ga)
        if pto_ga > 0:
            mass = topo.AUTH_ROUTE_SHARE * (1 - err_a_gw) * pto_ga
            gws.stalls.append(Stall(t_ga + gws.own_ms, mass, True))
        gws.stalls += inherit(ath.stalls, t_ga, topo.AUTH_ROUTE_SHARE, gws.own_ms)
    if ok["gateway", "payments"]:
        gws.mu_ms += checkout_share * truncated_mean(pay.mu_ms, t_gp)
        if pto_gp > 0:
            gws.stalls.append(
                Stall(t_gp + gws.own_ms, checkout_share * (1 - pay.err) * pto_gp, True)
            )
        gws.stalls += inherit(pay.stalls, t_gp, checkout_share, gws.own_ms)

    snap.services = {"gateway": gws, "auth": ath, "payments": pay, "cache": cache, "db": dbs}
    _finish(snap, inp, gw_tls)
    snap.r1, snap.r2, snap.refused, snap.disk_full, snap.hit_cfg = (
        r1,
        r2,
        refused,
        disk_full,
        hit_cfg,
    )
    snap.pool_err = {"auth": pool_err_a, "payments": pool_err_p}
    snap.rej_login, snap.rej_401 = rej_login, rej_401

    # service-specific metrics (§6.2 "Outputs and metrics")
    gws.extra["http_429_rate"] = inp.ingress_rps * r1 + checkout * r2
    gws.extra["tls_handshake_errors"] = inp.ingress_rps if gw_tls else 0.0
    ath.extra["http_429_rate"] = rej_login
    ath.extra["db_pool_in_use"] = round(
        min(
            num(au, "db.pool_max"),
            pool_demand_a * (1 - pool_err_a) * topo.POOL_HOLD_S / max(1, ready["auth"]),
        )
    )
    pay_pool_demand = pay_in * (1 - pool_err_p) * ok["payments", "db"]
    pay.extra["db_pool_in_use"] = round(
        min(num(pa, "db.pool_max"), pay_pool_demand * topo.POOL_HOLD_S / max(1, ready["payments"]))
    )
    pay.extra["cache_hit_ratio_observed"] = hit if pay_in > 0 else 0.0
    cache_up = ready["cache"] > 0
    cache.extra["hit_ratio"] = hit_cfg if cache_up and cache_ops > 0 else 0.0
    evicting = num(ca, "memory.maxmemory_mb") < topo.CACHE_WORKING_SET_MB
    cache.extra["evictions_per_s"] = (
        6.0 * cache_ops * (1 - hit_cfg) if cache_up and evicting else 0.0
    )
    cache.extra["used_memory_mb"] = (
        round(min(num(ca, "memory.maxmemory_mb"), topo.CACHE_WORKING_SET_MB)) if cache_up else 0
    )
    dbs.extra["connections"] = round(min(pools, budget)) if ready["db"] > 0 else 0
    dbs.extra["qps"] = qps
    dbs.extra["disk_used_pct"] = disk
    return snap


def _oom_share(inp: MinuteInputs, c: Mapping[str, Config], service: str) -> float:
    replicas = num(c[service], "deploy.replicas")
    return inp.killed.get(service, 0) / replicas if replicas > 0 else 0.0


def _finish(snap: Snapshot, inp: MinuteInputs, gw_tls: bool) -> None:
    """Idle and down services, p99, CPU and memory."""
    for name, st in snap.services.items():
        tls_dead_edge = name == "gateway" and gw_tls
        idle = st.rps <= 0 and not tls_dead_edge
        completes_nothing = idle or st.ready == 0 or tls_dead_edge
        st.p99_ms = 0.0 if completes_nothing else p99_of(st.mu_ms, st.stalls)
        if idle and st.ready > 0:
            st.err = 0.0
        st.cpu_pct = 0.0 if st.ready == 0 else min(100.0, 100 * st.u)
        limit = num(inp.running[name], "resources.memory_limit_mb")
        st.mem_pct = 100.0 * inp.memory_mb.get(name, topo.BASE_MEMORY_MB[name]) / limit
