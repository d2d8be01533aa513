"""Service logs: emission, templates, deduplication and witnesses (docs/environment.md §6.8).

For each service and minute the world emits, in order: fault lines (a *generic* per-request line
before its *signature* line), saturation, overload, relayed upstream errors, restart lines, the
task's decoy lines and benign lines. Every choice (which benign template, the second, the replica)
is a hash of coordinates, so logs are identical whatever was read before. Numbers in lines are
noise-free and rounded to integers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from srez_env.sim.engine import Snapshot, flag, num
from srez_env.sim.latency import p_timeout
from srez_env.sim.timeline import Minute, World
from srez_env.task import DecoyLog
from srez_env.telemetry.noise import text_hash
from srez_env.world import topology as topo
from srez_env.world.conffile import Value

SUPPRESSED: Final = "log: similar messages suppressed since"

BENIGN: Final = {
    "gateway": (
        "GET /healthz 200 {ms}ms",
        "POST /checkout 200 {ms}ms",
        "POST /v1/login 200 {ms}ms",
        "GET /v1/catalog 200 {ms}ms",
        "access log flushed (4096 entries)",
        "route table unchanged (2 upstreams)",
    ),
    "auth": (
        "POST /v1/introspect 200 {ms}ms",
        "POST /v1/token 200 {ms}ms",
        "GET /healthz 200 1ms",
        "signing keys refreshed (3 active)",
        "gc: young collection {ms}ms",
    ),
    "payments": (
        "POST /v1/charges 200 {ms}ms",
        "GET /v1/quotes 200 {ms}ms",
        "GET /healthz 200 1ms",
        "ledger sync complete ({ms} entries)",
        "gc: young collection {ms}ms",
    ),
    "cache": (
        "Accepted connection from 10.0.2.21:5{ms}12",
        "DB saved on disk",
        "Background saving terminated with success",
        "100 changes in 300 seconds. Saving...",
    ),
    "db": (
        "LOG: checkpoint starting: time",
        "LOG: connection authorized: user=app database=payments",
        "LOG: disconnection: user=app database=payments duration=0.0{ms}s",
        "LOG: statement: SELECT 1",
    ),
}
_DEPENDENCIES: Final = {
    "gateway": ("auth", "payments"),
    "payments": ("auth", "db"),
    "auth": ("db",),
}


@dataclass(frozen=True, slots=True)
class Row:
    """One emitted fault-or-state line before timestamps are assigned."""

    level: str
    text: str
    kind: str | None = None  # the fault kind whose signature this is (dedup applies to these)
    generic: tuple[str, str] | None = None  # the per-request consequence printed before it
    fails_requests: bool = False
    """The line reports requests the service itself fails (a 429, a release's exception, a 401)
    though no per-request line precedes it on the easy and medium tiers: on the hard tier it is
    replaced by the failing request all the same (§6.8)."""


@dataclass(slots=True)
class LogSource:
    """Renders the logs of one task's world (shared by every episode of the task)."""

    seed: int
    t0: datetime
    onset: int
    dedup: bool
    benign_per_min: int
    generic: bool
    decoys: tuple[DecoyLog, ...]

    def lines(self, world: World, service: str, minute: int) -> list[str]:
        """The log lines of ``service`` at ``minute``, sorted by second.

        Memoised on the minute itself: a computed minute never changes, and the episodes of one
        task share the minutes before T0.
        """
        at = world.at(minute)
        cached = at.log_memo.get(service)
        if cached is None:
            cached = at.log_memo[service] = self._render(world, at, service)
        return cached

    def window(self, world: World, service: str, first: int, last: int) -> list[str]:
        """Every line of minutes ``first`` ... ``last``, oldest first."""
        out: list[str] = []
        for minute in range(first, last + 1):
            out += self.lines(world, service, minute)
        return out

    # ------------------------------------------------------------------ rendering
    def _render(self, world: World, at: Minute, s: str) -> list[str]:
        m = at.minute
        if num(at.running[s], "deploy.replicas") <= 0:
            return []  # a service scaled to zero has no process to log anything
        snap = at.snapshot()
        out: list[tuple[str, str]] = []
        for row in fault_rows(world, at, snap, s):
            if row.kind and self.generic:
                # the failing request alone, in the words every fault shares: the cause is for
                # the other tools to show (§6.8)
                if row.generic or row.fails_requests:
                    out.append(failing_request(s))
                continue
            if row.generic:
                out.append(row.generic)
            if row.kind and self.dedup:
                first = self._first(world, s, row.kind, m)
                if (m - first) % 60 != 0:
                    out.append(("WARN", f"{SUPPRESSED} {topo.timestamp(self.t0, first)}"))
                    continue
            out.append((row.level, row.text))
        out += [(d.level, d.text) for d in self.decoys if d.service == s and m % d.every_min == 0]
        templates = BENIGN[s]
        minute = f"{self.seed}|{s}|{m}|"  # unit_hash(seed, s, m, ...) is text_hash of this + ...
        for k in range(self.benign_per_min):
            template = templates[int(text_hash(f"{minute}{k}") * len(templates))]
            ms = 1 + int(text_hash(f"{minute}{k}|ms") * 40)
            out.append(("INFO", template.format(ms=ms)))
        ready = max(1, snap[s].ready)
        stamped = []
        for j, (level, text) in enumerate(out):
            second = int(60 * text_hash(f"{minute}{j}|sec"))
            replica = int(text_hash(f"{minute}{j}|r") * ready)
            line = f"{topo.timestamp(self.t0, m, second)} {s}-{replica} {level} {text}"
            stamped.append((second, j, line))
        return [line for _sec, _j, line in sorted(stamped)]

    def _first(self, world: World, s: str, kind: str, m: int) -> int:
        """The first minute from the onset at which ``kind``'s signature is active on ``s``."""
        key = ("first_signature", s, kind)
        if key not in world.memo:
            first = m
            for k in range(self.onset, m + 1):
                at = world.at(k)
                if any(r.kind == kind for r in fault_rows(world, at, at.snapshot(), s)):
                    first = k
                    break
            world.memo[key] = first
        return world.memo[key]


def failing_request(s: str) -> tuple[str, str]:
    """The line of a request ``s`` fails: what every fault's requests share on the hard tier."""
    return ("ERROR", f"{topo.ROUTES[s]} -> 503 (upstream error)")


def fault_rows(world: World, at: Minute, snap: Snapshot, s: str) -> list[Row]:
    """The fault, saturation, overload, relay and restart rows of ``s`` at one minute."""
    c = at.running
    cfg = c[s]
    generic = failing_request(s)
    rows: list[Row] = []
    for e in topo.EDGES:
        state = snap.conn[e.client, e.server]
        if e.client != s or state is None:
            continue
        d = e.server
        if state == "refused":
            port = cfg[e.port_key]
            text = f"dial tcp {topo.IPS[d]}:{port}: connect: connection refused"
            if d == "cache":
                rows.append(
                    Row("WARN", f"cache: {text} (falling back to db)", "wrong_upstream_port")
                )
            else:
                rows.append(Row("ERROR", f"{d}: {text}", "wrong_upstream_port", generic))
        elif state == "dns":
            ns = cfg["resolver.nameserver"]
            text = f"{d}: lookup {d}.svc.internal on {ns}:53: read udp {topo.IPS[s]}:41234->{ns}:53: i/o timeout"
            rows.append(Row("ERROR", text, "dns_misconfig", generic))
        elif state == "tls":
            path = str(c[d]["tls.cert_file"])
            not_after, subject = world.certs[path], world.subjects[path]
            if not_after <= at.minute:
                text = (
                    f"{d}: tls: failed to verify certificate: x509: certificate has expired or is "
                    f"not yet valid: current time {topo.timestamp(world.t0, at.minute, 12)} is "
                    f"after {topo.timestamp(world.t0, not_after)}"
                )
            else:  # a name mismatch, as Go's crypto/x509 words it
                text = (
                    f"{d}: tls: failed to verify certificate: x509: certificate is valid for "
                    f"{subject.removeprefix('CN=')}, not {d}.svc.internal"
                )
            relay = (
                "ERROR",
                f"upstream {d}: 503 upstream connect error or disconnect/reset before headers "
                "(reset reason: connection failure)",
            )
            rows.append(Row("ERROR", text, "expired_tls_cert", relay))
        elif at.restarting.get(d) or at.killed.get(d):
            rows.append(Row("ERROR", f"{d}: read tcp {topo.IPS[d]}: connection reset by peer"))
        elif d == "cache":
            text = "cache: no healthy upstream for cluster cache (0/0 endpoints ready); falling back to db"
            rows.append(Row("WARN", text, "replicas_zero"))
        else:
            text = f"no healthy upstream for cluster {d} (0/0 endpoints ready)"
            rows.append(Row("ERROR", text, "replicas_zero", generic))
    if s in topo.TLS_SERVERS and at.cert_rejected.get(s) and flag(cfg, "tls.enabled"):
        expired = world.certs[str(cfg["tls.cert_file"])] <= at.minute
        text = "sslv3 alert certificate expired" if expired else "sslv3 alert bad certificate"
        text = (
            f"could not accept SSL connection: {text}"
            if s == "db"
            else f"tls: handshake failed: {text}"
        )
        # the edge's callers are outside the system, so no caller logs the requests its
        # certificate fails: the edge does, on the hard tier (§6.8), or its silence would name it
        edge = not any(e.server == s for e in topo.EDGES)
        rows.append(Row("ERROR", text, "expired_tls_cert", fails_requests=edge))
    rows += _pool_rows(snap, c, s, generic)
    rows += _version_rows(at, snap, s)
    rows += _service_rows(at, snap, s)
    for e in topo.EDGES:  # K12's line is real whatever makes the dependency slow
        if e.client != s or e.soft or snap.conn[e.client, e.server] is not None:
            continue
        dep = snap[e.server]
        mean = dep.own_ms if e.server == "db" else dep.mu_ms
        timeout = num(cfg, e.timeout_key)
        if p_timeout(timeout, mean) >= 0.01:
            text = f"{e.server}: context deadline exceeded (timeout={int(timeout)}ms) {topo.ROUTES[e.server]}"
            rows.append(Row("ERROR", text, "dependency_timeout", generic))
    st = snap[s]
    if st.ready > 0 and st.u >= 0.9:
        pct = min(99, round(10 + 200 * (st.u - 0.9)))
        limit = cfg["resources.cpu_limit_millicores"]
        rows.append(
            Row(
                "WARN",
                f"runtime: cpu throttled {pct}% of periods (limit={limit}m)",
                "cpu_throttling",
            )
        )
    if st.over > 0:
        text = (
            "canceling statement due to statement timeout"
            if s == "db"
            else f"{topo.ROUTES[s]} -> 503 (overloaded: request queue full)"
        )
        rows.append(Row("ERROR", text))
    for d in _DEPENDENCIES.get(s, ()):
        if d != "db" and snap.conn[s, d] is None and snap[d].err >= 0.01:
            rows.append(Row("ERROR", f"upstream {d}: 503 (upstream error) {topo.ROUTES[s]}"))
    if at.restarting.get(s):
        rows.append(Row("INFO", f"starting {s} version={cfg['deploy.version']}"))
    return rows


def _pool_rows(
    snap: Snapshot, c: dict[str, dict[str, Value]], s: str, generic: tuple[str, str]
) -> list[Row]:
    """Pool waits (K03), connection refusals (K04) and a full disk (K07) on the db path."""
    rows: list[Row] = []
    cfg = c[s]
    if s in ("payments", "auth"):
        pool_err = snap.pool_err[s]
        if pool_err > 0:
            pool = cfg["db.pool_max"]
            waiting = round(pool_err * snap[s].rps * topo.POOL_HOLD_S)
            text = (
                f"pool: timeout acquiring db connection after {cfg['db.timeout_ms']}ms "
                f"(in_use={pool}/{pool} waiting={waiting})"
            )
            rows.append(Row("WARN", text, "conn_pool_exhaustion", generic))
        connected = snap.conn[s, "db"] is None
        if snap.refused > 0 and connected:
            rows.append(
                Row(
                    "ERROR",
                    "db: pq: sorry, too many clients already",
                    "db_max_connections_low",
                    generic,
                )
            )
        if s == "payments" and snap.disk_full and connected:
            text = f"db: pq: {_NO_SPACE}"
            rows.append(Row("ERROR", text, "disk_full", generic))
    if s == "db":
        if snap.refused > 0:
            text = (
                f"sorry, too many clients already (max_connections={cfg['server.max_connections']})"
            )
            rows.append(Row("FATAL", text, "db_max_connections_low"))
        disk = snap["db"].extra["disk_used_pct"]
        if disk >= 100:
            aborted = (
                "ERROR",
                "current transaction is aborted, commands ignored until end of transaction block",
            )
            rows.append(Row("ERROR", _NO_SPACE, "disk_full", aborted))
        elif disk >= 90:
            text = f"disk usage {disk:.0f}% on /var/lib/postgresql/data"
            rows.append(Row("WARN", text, "disk_full"))
    return rows


def _version_rows(at: Minute, snap: Snapshot, s: str) -> list[Row]:
    """What a faulty running version prints: leaks and OOM kills (K05), errors (K06)."""
    rows: list[Row] = []
    cfg = at.running[s]
    props = at.props[s]
    version = cfg["deploy.version"]
    if float(props.get("leak_mb_per_min", 0)) > 0:
        limit = num(cfg, "resources.memory_limit_mb")
        mem = at.memory_mb(s)
        text = f"runtime: memory {mem:.0f}MB of {limit:.0f}MB limit ({100 * mem / limit:.0f}%), gc pause 410ms"
        rows.append(Row("WARN", text, "memory_leak"))
        for replica in range(at.killed.get(s, 0)):
            text = f"container {s}-{replica} OOMKilled (memory limit {limit:.0f}Mi), restarting"
            rows.append(Row("ERROR", text, "memory_leak"))
    if float(props.get("error_rate", 0)) > 0:
        exception = props.get("exception", "java.lang.RuntimeException")
        text = f"handler {topo.ROUTES[s]}: {exception} [version={version}]"
        rows.append(Row("ERROR", text, "bad_deploy", fails_requests=True))
    query_mult = float(props.get("query_mult", 1))
    if query_mult > 1:  # an N+1 regression does not throw: this line matches no signature (the
        # heuristic's), but it names the release, so generic fault lines leave it out
        text = (
            f"slow request {topo.ROUTES[s]} took {snap[s].p99_ms:.0f}ms "
            f"(db_queries={round(14 * query_mult / 4)}) [version={version}]"
        )
        rows.append(Row("WARN", text, "bad_deploy"))
    return rows


def _service_rows(at: Minute, snap: Snapshot, s: str) -> list[Row]:
    """Cache evictions (K09), rate limiting (K10) and feature flags (K11)."""
    rows: list[Row] = []
    cfg = at.running[s]
    if s == "cache" and snap[s].ready > 0 and snap[s].rps > 0:
        evictions = snap[s].extra["evictions_per_s"]
        if evictions > 0:
            mm = cfg["memory.maxmemory_mb"]
            policy = cfg["memory.eviction_policy"]
            text = f"evicted {evictions:.0f} keys in last 1s (used_memory={mm}MB maxmemory={mm}MB policy={policy})"
            rows.append(Row("WARN", text, "cache_eviction_stampede"))
        ttl = num(cfg, "keys.default_ttl_s")
        if ttl < 60:
            text = f"expired {snap[s].rps * 5:.0f} keys in last 1s (default_ttl_s={ttl:.0f})"
            rows.append(Row("WARN", text, "cache_eviction_stampede"))
    if s == "gateway":
        if snap.r1 > 0:
            rows.append(_rejected(snap.ingress_rps * snap.r1, "req/s", cfg, "requests_per_second"))
        if snap.r2 > 0:
            rejected = snap[s].extra["http_429_rate"] - snap.ingress_rps * snap.r1
            rows.append(_rejected(rejected, "req/s on /checkout", cfg, "checkout_rps"))
        if flag(cfg, "flags.request_mirroring"):
            text = "mirror: copied POST /checkout to payments (flag request_mirroring=on)"
            rows.append(Row("INFO", text, "feature_flag_regression"))
    if s == "auth":
        if snap.rej_login > 0:
            rows.append(_rejected(snap.rej_login, "logins/s", cfg, "login_per_minute"))
        if snap.rej_401 > 0:
            text = (
                "token: audience mismatch for client_id=mobile-ios (flag strict_audience=on) -> 401"
            )
            rows.append(Row("WARN", text, "feature_flag_regression", fails_requests=True))
    if s == "payments" and flag(cfg, "flags.new_fraud_check"):
        text = "fraud-check: call to risk-api.external timed out after 5000ms (flag new_fraud_check=on)"
        rows.append(Row("WARN", text, "feature_flag_regression"))
    return rows


def _rejected(count: float, what: str, cfg: Mapping[str, Value], setting: str) -> Row:
    """A rate limiter's rejection line (K10): ``count`` per second over ``ratelimit.<setting>``."""
    limit = cfg[f"ratelimit.{setting}"]
    text = f"ratelimit: rejected {count:.0f} {what} (limit {setting}={limit}) -> 429"
    return Row("WARN", text, "rate_limit_misconfig", fails_requests=True)


_NO_SPACE: Final = 'could not extend file "base/16384/24576": No space left on device'
