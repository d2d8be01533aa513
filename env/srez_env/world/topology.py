"""Static facts of the simulated system: services, edges, constants and the base world.

The numbers are the constants of docs/environment.md §6.1. Nothing here is editable by an agent; the
derived baselines (p99, rps, ``cpu_needed``...) are computed once from the base state by
:mod:`srez_env.sim.baseline`, never from live values.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Final

from srez_env.vocab import SERVICES as SERVICES  # re-exported: the topology names its services

PER_REPLICA_RPS: Final = {
    "gateway": 400.0,
    "auth": 250.0,
    "payments": 100.0,
    "cache": 20000.0,
    "db": 650.0,
}
BASE_MS: Final = {"gateway": 6.0, "auth": 8.0, "payments": 18.0, "cache": 0.5, "db": 3.0}
CPU_BASE_M: Final = {"gateway": 2000, "auth": 1000, "payments": 1000, "cache": 500, "db": 4000}
BASE_REPLICAS: Final = {"gateway": 3, "auth": 3, "payments": 4, "cache": 1, "db": 1}
MIN_REPLICAS: Final = {"gateway": 2, "auth": 2, "payments": 2, "cache": 1, "db": 1}
BASE_MEMORY_MB: Final = {
    "gateway": 358.4,
    "auth": 460.8,
    "payments": 819.2,
    "cache": 409.6,
    "db": 4915.2,
}

INGRESS_RPS: Final = 400.0
AUTH_ROUTE_SHARE: Final = 0.6
CHECKOUT_ROUTE_SHARE: Final = 0.4
LOGIN_SHARE: Final = 0.2  # of gateway->auth traffic
MOBILE_SHARE: Final = 0.35  # of gateway->auth traffic
AUTH_DB_SHARE: Final = 0.3  # auth requests that make one db query
PAYMENTS_WRITE_SHARE: Final = 0.5  # payments requests that make one write
CACHE_CALLS: Final = 3
POOL_HOLD_S: Final = 0.15
CACHE_WORKING_SET_MB: Final = 350.0
USUAL_NAMESERVERS: Final = ("10.0.0.53", "10.0.0.54")
"""The resolvers most services use."""
GOOD_NAMESERVERS: Final = (
    *USUAL_NAMESERVERS,
    "10.0.1.53",
    "10.0.1.54",
    "10.0.2.53",
    "10.0.2.54",
    "10.0.3.53",
    "10.0.4.53",
)
"""Every resolver that answers: the usual ones and the site-local ones a few services use."""
MIRROR_FACTOR: Final = 2.5
FRAUD_STALL_MS: Final = 5000.0
FRAUD_SHARE: Final = 0.25
TAIL_FACTOR: Final = 4.6  # p99 of an exponential body is 4.6 times its mean
SOAK_MINUTES: Final = 10
DB_CONNECTION_RESERVE: Final = 10  # max_connections reserved for superusers and replication
TLS_SERVERS: Final = ("gateway", "auth", "payments", "db")

HISTORY_START: Final = -240  # minutes relative to T0
BASELINE_WINDOW: Final = (-180, -121)  # the fixed, fault-free hour behind `baseline_1h`
DAY: Final = 1440
DEFAULT_T0: Final = datetime(2025, 3, 14, 10, 0, 0, tzinfo=UTC)

IPS: Final = {
    "gateway": "10.0.1.10",
    "auth": "10.0.2.8",
    "payments": "10.0.2.21",
    "cache": "10.0.4.7",
    "db": "10.0.3.15",
}
ROUTES: Final = {
    "gateway": "POST /checkout",
    "auth": "POST /v1/introspect",
    "payments": "POST /v1/charges",
    "cache": "GET",
    "db": "SELECT",
}


@dataclass(frozen=True, slots=True)
class Edge:
    """A caller->dependency edge and the caller's keys that configure it."""

    client: str
    server: str
    port_key: str
    timeout_key: str
    soft: bool = False  # a failing soft dependency turns into misses, not errors


EDGES: Final = (
    Edge("gateway", "auth", "upstream.auth.port", "upstream.auth.timeout_ms"),
    Edge("gateway", "payments", "upstream.payments.port", "upstream.payments.timeout_ms"),
    Edge("payments", "auth", "upstream.auth.port", "upstream.auth.timeout_ms"),
    Edge("payments", "cache", "cache.port", "cache.timeout_ms", soft=True),
    Edge("payments", "db", "db.port", "db.timeout_ms"),
    Edge("auth", "db", "db.port", "db.timeout_ms"),
)


def edge(client: str, server: str) -> Edge:
    """The edge from ``client`` to ``server``; KeyError if there is none."""
    for candidate in EDGES:
        if candidate.client == client and candidate.server == server:
            return candidate
    raise KeyError((client, server))


def neighbours(service: str) -> set[str]:
    """Services one dependency edge away from ``service``, in either direction."""
    return {e.server for e in EDGES if e.client == service} | {
        e.client for e in EDGES if e.server == service
    }


BASE_REGISTRY: Final = {  # oldest first; the last is the running version. Minutes before T0.
    "gateway": (("5.1.0", 30 * DAY), ("5.1.2", 16 * DAY), ("5.2.0", 6 * DAY)),
    "auth": (("2.9.4", 40 * DAY), ("3.0.1", 20 * DAY), ("3.0.2", 8 * DAY)),
    "payments": (("2.3.8", 35 * DAY), ("2.3.9", 18 * DAY), ("2.4.0", 5 * DAY)),
    "cache": (("7.2.2", 60 * DAY), ("7.2.3", 30 * DAY), ("7.2.4", 12 * DAY)),
    "db": (("15.2", 90 * DAY), ("15.3", 45 * DAY), ("15.4", 21 * DAY)),
}

BASE_CERTS: Final = {  # path -> not_after in minutes from T0 (2025 certs: 2026-03-10)
    **{f"/etc/certs/{s}-2025.pem": 361 * DAY for s in TLS_SERVERS},
    **{f"/etc/certs/{s}-2024.pem": -4 * DAY for s in TLS_SERVERS},
}


def cert_subject(path: str) -> str:
    """The certificate's subject, from the service named in its file name."""
    service = path.rsplit("/", 1)[-1].split("-", 1)[0]
    return f"CN={service}.svc.internal"


@functools.lru_cache(maxsize=1 << 14)  # logs and alerts stamp the same minutes again and again
def timestamp(t0: datetime, minute: int, second: int = 0) -> str:
    """ISO-8601 UTC with whole seconds, ``minute`` minutes after T0."""
    moment = t0 + timedelta(minutes=minute, seconds=second)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


BASE_CONF: Final = {
    s: resources.files(__package__).joinpath(f"conf/{s}.conf").read_text(encoding="utf-8")
    for s in SERVICES
}
"""The typical world's config file of each service (``conf/<service>.conf``), verbatim."""
