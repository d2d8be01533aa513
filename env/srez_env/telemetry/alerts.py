"""Alerts (docs/environment.md §6.6): evaluated every minute on noise-free values.

An alert fires at the first minute its condition holds and resolves at the second consecutive
minute it is false. ``get_alerts`` lists the active alerts in scope and those resolved in the last
60 minutes, sorted by (since, name, service).
"""

from __future__ import annotations

from dataclasses import dataclass

from srez_env.sim.engine import flag
from srez_env.sim.timeline import World
from srez_env.telemetry.status import status_of
from srez_env.vocab import ALERT_SEVERITY
from srez_env.world import topology as topo

AlertKey = tuple[str, str]  # (name, service)


@dataclass(frozen=True, slots=True)
class Alert:
    """One alert as ``get_alerts`` shows it."""

    name: str
    service: str
    since: int
    resolved_at: int | None
    severity: str
    summary: str


def conditions(world: World, minute: int) -> dict[AlertKey, str]:
    """Alerts whose condition holds at ``minute``, each with its one-line summary (memoised on
    the minute, which never changes once computed)."""
    at = world.at(minute)
    if at.alert_memo is None:
        at.alert_memo = _conditions(world, minute)
    return at.alert_memo


def _conditions(world: World, minute: int) -> dict[AlertKey, str]:
    at = world.at(minute)
    snap = at.snapshot()
    status = status_of(snap)
    out: dict[AlertKey, str] = {}
    for s in topo.SERVICES:
        st = snap[s]
        if st.err >= (0.01 if s == "gateway" else 0.02):
            out["HighErrorRate", s] = f"error rate {st.err:.1%} on {s}"
        slow = st.p99_ms >= 500 if s == "gateway" else st.p99_ms > 2 * snap.p99_base[s]
        if slow:
            out["HighLatencyP99", s] = f"p99 latency {st.p99_ms:.0f} ms on {s}"
        if status[s] == "down":
            out["ServiceDown", s] = f"{s} is down ({st.ready} replicas ready)"
        if st.cpu_pct >= 90:
            out["HighCPU", s] = f"cpu {st.cpu_pct:.0f}% on {s}"
        if at.restarts_15m[s] >= 3:
            out["PodRestarting", s] = f"{at.restarts_15m[s]} restarts in 15 min on {s}"
    disk = snap["db"].extra["disk_used_pct"]
    if disk >= 90:
        out["DiskAlmostFull", "db"] = f"disk {disk:.0f}% used on db"
    for s in topo.TLS_SERVERS:
        cfg = at.running[s]
        not_after = world.certs[str(cfg["tls.cert_file"])]
        if not flag(cfg, "tls.enabled"):
            continue
        if not_after <= minute:
            out["CertExpired", s] = (
                f"certificate of {s} expired at {topo.timestamp(world.t0, not_after)}"
            )
        elif not_after - minute < 7 * topo.DAY:
            days = (not_after - minute) / topo.DAY
            out["CertExpiringSoon", s] = f"certificate of {s} expires in {days:.1f} days"
    for s in ("gateway", "auth"):
        rate = snap[s].extra["http_429_rate"]
        if snap[s].rps > 0 and rate >= 0.01 * max(snap[s].rps, 1.0):
            out["HighRejectRate", s] = f"{rate:.0f} req/s rejected with 429 on {s}"
    cache = snap["cache"]
    if cache.ready > 0 and cache.rps > 0 and cache.extra["hit_ratio"] < 0.80:
        out["CacheHitRatioLow", "cache"] = f"cache hit ratio {cache.extra['hit_ratio']:.2f}"
    return out


def alerts_at(world: World, minute: int) -> list[Alert]:
    """Active alerts and those resolved in the last 60 minutes, sorted (since, name, service)."""
    state: dict[AlertKey, tuple[int, int | None]] = {}
    summary: dict[AlertKey, str] = {}
    previous: dict[AlertKey, str] = {}
    for m in range(topo.HISTORY_START, minute + 1):
        current = conditions(world, m)
        for alert, text in current.items():
            if alert not in state or state[alert][1] is not None:
                state[alert] = (m, None)
            summary[alert] = text
        for alert, (since, resolved) in list(state.items()):
            if resolved is None and alert not in current and alert not in previous:
                state[alert] = (since, m)
        previous = current
    out = [
        Alert(name, s, since, resolved, severity(name, s), summary[name, s])
        for (name, s), (since, resolved) in state.items()
        if resolved is None or minute - resolved < 60
    ]
    return sorted(out, key=lambda a: (a.since, a.name, a.service))


def severity(name: str, service: str) -> str:
    """The gateway carries the user-facing SLO, so its error and latency alerts are critical."""
    if service == "gateway" and name in ("HighErrorRate", "HighLatencyP99"):
        return "critical"
    return ALERT_SEVERITY[name]


def in_scope(alert: Alert, scope: str, also: tuple[str, ...]) -> bool:
    """``all`` shows everything; ``edge`` the gateway's alerts plus the listed extras."""
    return scope == "all" or alert.service == "gateway" or f"{alert.name}:{alert.service}" in also
