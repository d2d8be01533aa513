"""Alerts (docs/environment.md §6.6): evaluated every minute on noise-free values.

An alert fires at the first minute its condition holds and resolves at the second consecutive
minute it is false. ``get_alerts`` lists the active alerts in scope and those resolved in the last
60 minutes, sorted by (since, name, service).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from srez_env.sim.engine import flag
from srez_env.sim.timeline import Minute, World
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
    """Alerts whose condition holds at ``minute``, each with its one-line summary."""
    at = world.at(minute)
    return {**_engine_conditions(at), **_cert_conditions(world, at, minute)}


def _engine_conditions(at: Minute) -> dict[AlertKey, str]:
    """The conditions read from the engine's snapshot and the restart counts, memoised on the
    minute (which never changes once computed) and shared with the previous minute when both
    feed the engine the same inputs and count the same restarts, as most of a history does."""
    chain = [at]  # back to a minute with a memo, or one that must be evaluated itself
    while chain[-1].alert_memo is None and _shares_conditions(chain[-1]):
        assert chain[-1].same_inputs_as is not None
        chain.append(chain[-1].same_inputs_as)
    memo = chain[-1].alert_memo
    if memo is None:
        memo = _from_snapshot(chain[-1])
    for minute in chain:
        minute.alert_memo = memo
    return memo


def _shares_conditions(at: Minute) -> bool:
    same = at.same_inputs_as
    return same is not None and same.restarts_15m is at.restarts_15m


def _from_snapshot(at: Minute) -> dict[AlertKey, str]:
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
    for s in ("gateway", "auth"):
        rate = snap[s].extra["http_429_rate"]
        if snap[s].rps > 0 and rate >= 0.01 * max(snap[s].rps, 1.0):
            out["HighRejectRate", s] = f"{rate:.0f} req/s rejected with 429 on {s}"
    cache = snap["cache"]
    if cache.ready > 0 and cache.rps > 0 and cache.extra["hit_ratio"] < 0.80:
        out["CacheHitRatioLow", "cache"] = f"cache hit ratio {cache.extra['hit_ratio']:.2f}"
    return out


def _cert_conditions(world: World, at: Minute, minute: int) -> dict[AlertKey, str]:
    """The certificate alerts, which turn with the minute itself (an expiry, days left)."""
    out: dict[AlertKey, str] = {}
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
    return out


@dataclass(frozen=True, slots=True)
class _Fold:
    """The alert state machine after one minute: each alert's (since, resolved_at), its latest
    summary, and the conditions that held at that minute."""

    state: dict[AlertKey, tuple[int, int | None]]
    summary: dict[AlertKey, str]
    current: dict[AlertKey, str]


_EMPTY: Final = _Fold({}, {}, {})


def _step(fold: _Fold, current: dict[AlertKey, str], m: int) -> _Fold:
    state = dict(fold.state)
    summary = dict(fold.summary)
    for alert, text in current.items():
        if alert not in state or state[alert][1] is not None:
            state[alert] = (m, None)
        summary[alert] = text
    for alert, (since, resolved) in list(state.items()):
        if resolved is None and alert not in current and alert not in fold.current:
            state[alert] = (since, m)
    return _Fold(state, summary, current)


def _fold_at(world: World, minute: int) -> _Fold:
    """The state machine after ``minute``, memoised on every minute it passes: minutes never
    change once computed and forks share them, so each minute of a history is folded once per
    process rather than once per call (a reset asks for the alerts at T0 of every fork)."""
    start = minute
    while start >= topo.HISTORY_START and world.at(start).alert_fold is None:
        start -= 1
    fold = _EMPTY if start < topo.HISTORY_START else world.at(start).alert_fold
    assert isinstance(fold, _Fold)
    for m in range(start + 1, minute + 1):
        fold = _step(fold, conditions(world, m), m)
        world.at(m).alert_fold = fold
    return fold


def alerts_at(world: World, minute: int) -> list[Alert]:
    """Active alerts and those resolved in the last 60 minutes, sorted (since, name, service)."""
    fold = _fold_at(world, minute)
    out = [
        Alert(name, s, since, resolved, severity(name, s), fold.summary[name, s])
        for (name, s), (since, resolved) in fold.state.items()
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
