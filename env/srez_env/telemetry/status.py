"""Status of services and the SLO (docs/environment.md §3.4), plus the status-like observations."""

from __future__ import annotations

from typing import Final, Literal

from srez_env.sim.engine import Config, Snapshot, flag, num
from srez_env.sim.timeline import World
from srez_env.world import topology as topo
from srez_env.world.base import expected_subject
from srez_env.world.schema import RESTART_KEYS

Status = Literal["healthy", "degraded", "down"]
DEPENDS_ON: Final = {
    "gateway": ["auth", "payments"],
    "auth": ["db"],
    "payments": ["auth", "cache", "db"],
    "cache": [],
    "db": [],
}


def status_of(snap: Snapshot) -> dict[str, Status]:
    """Noise-free status: down if no replica is ready or half the requests fail."""
    out: dict[str, Status] = {}
    for s in topo.SERVICES:
        st = snap[s]
        if st.ready <= 0 or st.err >= 0.5:
            out[s] = "down"
        elif st.err >= 0.02 or st.p99_ms > 2 * snap.p99_base[s]:
            out[s] = "degraded"
        else:
            out[s] = "healthy"
    return out


def gateway_slo(snap: Snapshot) -> bool:
    """The user-facing SLO: gateway error rate under 1 % and p99 under 500 ms."""
    return snap["gateway"].err < 0.01 and snap["gateway"].p99_ms < 500


def slo_holds(snap: Snapshot) -> bool:
    """What ``func`` checks each minute: the gateway SLO and every service healthy."""
    return gateway_slo(snap) and all(v == "healthy" for v in status_of(snap).values())


def list_services(world: World, minute: int) -> list[dict[str, object]]:
    """The ``list_services`` observation."""
    at = world.at(minute)
    snap = at.snapshot()
    status = status_of(snap)
    return [
        {
            "name": s,
            "status": status[s],
            "version": at.running[s]["deploy.version"],
            "replicas": f"{snap[s].ready}/{int(num(at.running[s], 'deploy.replicas'))}",
            "depends_on": DEPENDS_ON[s],
        }
        for s in topo.SERVICES
    ]


def service_status(world: World, s: str, minute: int) -> dict[str, object]:
    """The ``get_status`` observation of one service."""
    at = world.at(minute)
    snap = at.snapshot()
    cfg, file = at.running[s], at.files[s]
    history = world.history(s, minute)
    versions = [
        {"version": v.name, "deployed_at": topo.timestamp(world.t0, v.deployed_at)}
        for v in reversed(history[-5:])
    ]
    pending = sorted(k for k in file.values if k in RESTART_KEYS and file.values[k] != cfg.get(k))
    last = at.last_restart[s]
    since = (
        last if last is not None else (history[-1].deployed_at if history else topo.HISTORY_START)
    )
    limit = num(cfg, "resources.memory_limit_mb")
    replicas = at.replica_memory.get(s) or tuple(
        topo.BASE_MEMORY_MB[s] for _ in range(int(num(cfg, "deploy.replicas")))
    )
    out: dict[str, object] = {
        "service": s,
        "status": status_of(snap)[s],
        "version": cfg["deploy.version"],
        "deploy_history": versions,
        "replicas": f"{snap[s].ready}/{int(num(cfg, 'deploy.replicas'))}",
        "restarts_1h": at.restarts_1h[s],
        "uptime_min": minute - since,
        "pending_restart": pending,
        "resources": {
            "cpu_limit_millicores": cfg["resources.cpu_limit_millicores"],
            "memory_limit_mb": cfg["resources.memory_limit_mb"],
            "memory_pct_per_replica": [round(100 * mb / limit, 1) for mb in replicas],
        },
    }
    if s == "db":
        disk = snap["db"].extra["disk_used_pct"]
        out["disk"] = f"{disk:.0f}% of {cfg['storage.disk_size_gb']} GB"
    if s in topo.TLS_SERVERS:
        out["tls"] = _tls_block(world, s, cfg, minute)
    return out


def _tls_block(world: World, s: str, cfg: Config, minute: int) -> dict[str, object]:
    running = str(cfg["tls.cert_file"])
    not_after = world.certs[running]
    days_left = round((not_after - minute) / topo.DAY, 2)
    available = []
    for path in sorted(world.certs):
        if not _issued_for(world, path, s):
            continue
        end = world.certs[path]
        state = "expired" if end <= minute else f"valid until {topo.timestamp(world.t0, end)[:10]}"
        available.append(f"{path} ({world.subjects[path]}, {state})")
    return {
        "enabled": flag(cfg, "tls.enabled"),
        "cert_file": running,
        "subject": world.subjects[running],
        "not_after": topo.timestamp(world.t0, not_after),
        "days_left": days_left,
        "expired": not_after <= minute,
        "available": available,
    }


def _issued_for(world: World, path: str, service: str) -> bool:
    """A certificate on the service's shelf: issued to it, or named after it (a mislabelled
    renewal shows up here with its real subject, as it would on the host)."""
    named = path.rsplit("/", 1)[-1].startswith(f"{service}-")
    return named or world.subjects[path] == expected_subject(service)


def events_view(world: World, service: str | None, since_min: int, minute: int) -> list[str]:
    """Audit events of the last ``since_min`` minutes, newest first: ``<ts> <text>``."""
    chosen = [
        e
        for e in world.events
        if minute - since_min <= e.minute <= minute and (service is None or e.service == service)
    ]
    chosen.sort(key=lambda e: -e.minute)
    return [f"{topo.timestamp(world.t0, e.minute)} {e.text}" for e in chosen]
