"""The fault catalogue: one entry per fault kind (docs/environment.md §3.5), the environment's unit
of growth.

An entry holds what the rest of the environment knows of its kind as data: its code and name, the
meaning the agent's tools give it, what its rule fires on, the services it can be rooted on, the
configuration keys a wrong value of which is this fault, the witness fragments its signature lines
carry, and what the heuristic expert and the memorised baseline know of it. The places that act on a
kind read it from here: the tools' glossary (:mod:`srez_env.actions`), the rules' codes
(:mod:`srez_env.sim.rules`, whose predicates are registered by kind and held to this table), the
heuristic's log signatures (:mod:`srez_env.baselines.heuristic`) and the memorised baseline's key
table (:mod:`srez_env.baselines.memorised`).

What stays code lives beside its engine and is held to the catalogue by tests: the rule's predicate
(``srez_env.sim.rules.RULES``), the lines its fault writes (``srez_env.telemetry.logs``), the
expert's reads per kind (``srez_env/generator/playbook.yaml``, keyed by code, root-only in the run
image), the heuristic's fix recipe and the diagnostician's hypothesis test. Adding a kind is one
entry here, those pieces, and their tests (docs/architecture.md, "Where to change what").

The catalogue sits at the bottom of the environment (it imports only the vocabulary) so that the
agent's contract can read the glossary; what it says of topology (a kind's roots) is checked against the
world's topology by ``tests/env/test_catalogue.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from srez_env.vocab import FAULT_KINDS, SERVICES

Target = Literal["self", "peer", "db", "cache", "cluster"]
"""Whom a signature line blames: the service whose log holds it (``self``), the TLS peer the line
names (``peer``), the db or the cache whoever logs it, or the cluster the line names."""


@dataclass(frozen=True, slots=True)
class Signature:
    """What the heuristic expert greps for (docs/environment.md §6.12): the regex of the kind's
    signature line and whom it blames; ``rank`` orders the signatures (the first that matches a
    service's log wins, so a line a kind shares with a consequence ranks after the cause's)."""

    pattern: str
    target: Target
    rank: int


@dataclass(frozen=True, slots=True)
class Drift:
    """The keys a wrong value of which is this kind, as (service or ``*``, key glob) pairs, and
    their ``rank`` among every kind's keys: hard breaks first (a port, resolver, certificate or
    replica count fails every request on its own), then capacity limits, then tunables, then the
    db's retention (the disk fills slowly). The memorised baseline reads a drifted key through
    this (:func:`srez_env.baselines.memorised.key_kind`)."""

    keys: tuple[tuple[str, str], ...]
    rank: int


@dataclass(frozen=True, slots=True)
class FaultEntry:
    """One fault kind of the catalogue."""

    code: str
    """``K01`` .. ``K14``: how the matrix, the playbook and the docs name the kind."""
    kind: str
    """The name an agent declares (:data:`srez_env.vocab.FAULT_KINDS`)."""
    glossary: str
    """What the kind means, as the tools' ``fault`` argument describes it to the agent."""
    fires_when: str
    """The rule's predicate in words (docs/environment.md §3.5)."""
    roots: tuple[str, ...]
    """The services the kind can be rooted on: those whose state its rule reads as the fault."""
    witnesses: tuple[str, ...]
    """Fragments of the kind's signature lines that evidence items and tests rely on (§6.8);
    empty for a kind whose lines carry the run's own values (a version, a flag, a key count)."""
    signature: Signature
    drift: Drift


ALL: Final = SERVICES
"""Every service: the roots of a kind any service can have."""

CATALOGUE: Final[tuple[FaultEntry, ...]] = (
    FaultEntry(
        code="K01",
        kind="wrong_upstream_port",
        glossary="a client's port for a dependency differs from the port it listens on",
        fires_when="a caller's port for a dependency differs from the dependency's `server.port`",
        roots=ALL,
        witnesses=("connect: connection refused",),
        signature=Signature(r"connect: connection refused", "self", 12),
        drift=Drift(
            (
                ("*", "server.port"),
                ("*", "db.port"),
                ("*", "cache.port"),
                ("*", "upstream.*.port"),
            ),
            0,
        ),
    ),
    FaultEntry(
        code="K02",
        kind="expired_tls_cert",
        glossary="a service presents an expired TLS certificate, so clients refuse it",
        fires_when=(
            "a TLS server's running certificate expires within the soak, or names another service"
        ),
        roots=("gateway", "auth", "payments", "db"),
        witnesses=("certificate has expired", "sslv3 alert certificate expired"),
        signature=Signature(r"certificate has expired|sslv3 alert certificate expired", "peer", 0),
        drift=Drift((("*", "tls.cert_file"),), 2),
    ),
    FaultEntry(
        code="K03",
        kind="conn_pool_exhaustion",
        glossary="a client's db connection pool is too small for its load",
        fires_when="`db.pool_max` of auth or payments is below the pool the world needs",
        roots=("auth", "payments"),
        witnesses=("timeout acquiring db connection",),
        signature=Signature(r"timeout acquiring db connection", "self", 4),
        drift=Drift((("*", "db.pool_max"),), 4),
    ),
    FaultEntry(
        code="K04",
        kind="db_max_connections_low",
        glossary="db accepts fewer connections than its clients' pools need",
        fires_when="the db's `max_connections` is below the clients' pools plus a reserve of 10",
        roots=("db",),
        witnesses=("too many clients already",),
        signature=Signature(r"too many clients already", "db", 1),
        drift=Drift((("db", "server.max_connections"),), 5),
    ),
    FaultEntry(
        code="K05",
        kind="memory_leak",
        glossary="a release leaks memory until its containers are OOM-killed",
        fires_when="the running version of a service leaks memory",
        roots=ALL,
        witnesses=("OOMKilled",),
        signature=Signature(r"OOMKilled|runtime: memory \d+MB of", "self", 3),
        drift=Drift((), 12),
    ),
    FaultEntry(
        code="K06",
        kind="bad_deploy",
        glossary="a release throws errors or issues far more db queries than before",
        fires_when="the running version has an error rate or multiplies its queries",
        roots=ALL,
        witnesses=(),
        signature=Signature(r"ERROR handler .*\[version=", "self", 10),
        drift=Drift((), 13),
    ),
    FaultEntry(
        code="K07",
        kind="disk_full",
        glossary="db's disk is full, so writes fail",
        fires_when="the db's disk (45 % plus 0.14 % per day of logs kept) is at 90 % or more",
        roots=("db",),
        witnesses=("No space left on device",),
        signature=Signature(r"No space left on device", "db", 2),
        drift=Drift((("db", "logging.retention_days"),), 11),
    ),
    FaultEntry(
        code="K08",
        kind="dns_misconfig",
        glossary="a service resolves names through a wrong nameserver",
        fires_when="a service's resolver is not one of the two good nameservers",
        roots=("gateway", "auth", "payments"),
        witnesses=("i/o timeout",),
        signature=Signature(r"lookup \S+ on [\d.]+:53: .*i/o timeout", "self", 5),
        drift=Drift((("*", "resolver.nameserver"),), 1),
    ),
    FaultEntry(
        code="K09",
        kind="cache_eviction_stampede",
        glossary="cache memory or TTL too small: keys are evicted, misses hit db",
        fires_when="the hit ratio the cache's memory and TTL allow is below 0.85",
        roots=("cache",),
        witnesses=(),
        signature=Signature(r"(evicted|expired) \d+ keys in last", "cache", 11),
        drift=Drift((("cache", "memory.maxmemory_mb"), ("cache", "keys.default_ttl_s")), 7),
    ),
    FaultEntry(
        code="K10",
        kind="rate_limit_misconfig",
        glossary="a rate limit set below normal traffic rejects requests with 429",
        fires_when="an enabled rate or login limit is below what the world's traffic needs",
        roots=("gateway", "auth"),
        witnesses=("ratelimit: rejected",),
        signature=Signature(r"ratelimit: rejected", "self", 8),
        drift=Drift((("*", "ratelimit.*"),), 8),
    ),
    FaultEntry(
        code="K11",
        kind="feature_flag_regression",
        glossary="a feature flag turned on a harmful behaviour",
        fires_when="one of the three known-bad flags is on",
        roots=("gateway", "auth", "payments"),
        witnesses=(),
        signature=Signature(r"\(flag \w+=on\)", "self", 9),
        drift=Drift((("*", "flags.*"),), 9),
    ),
    FaultEntry(
        code="K12",
        kind="dependency_timeout",
        glossary="a client's timeout towards a dependency is below its normal latency",
        fires_when="a hard dependency's timeout is below twice the dependency's baseline p99",
        roots=("gateway", "auth", "payments"),
        witnesses=("context deadline exceeded",),
        signature=Signature(r"context deadline exceeded \(timeout=\d+ms\)", "self", 7),
        drift=Drift(
            (
                ("*", "upstream.*.timeout_ms"),
                ("*", "db.timeout_ms"),
                ("*", "cache.timeout_ms"),
            ),
            10,
        ),
    ),
    FaultEntry(
        code="K13",
        kind="replicas_zero",
        glossary="a service was scaled below its minimum (to zero replicas)",
        fires_when="a service runs fewer replicas than its minimum",
        roots=ALL,
        witnesses=("no healthy upstream for cluster",),
        signature=Signature(r"no healthy upstream for cluster (\w+)", "cluster", 6),
        drift=Drift((("*", "deploy.replicas"),), 3),
    ),
    FaultEntry(
        code="K14",
        kind="cpu_throttling",
        glossary="a service's CPU limit is below what its load needs",
        fires_when="a CPU limit is below what the service needs at baseline demand",
        roots=ALL,
        witnesses=("cpu throttled",),
        signature=Signature(r"cpu throttled", "self", 13),
        drift=Drift((("*", "resources.cpu_limit_millicores"),), 6),
    ),
)
"""K01..K14 in code order."""

CONTROL_CODE: Final = "K00"
"""How the matrix and the playbook name the control kind ``none`` (a task with no fault)."""
CONTROL_GLOSSARY: Final = "no fault: the system is healthy and needs no change"
"""What the control kind ``none`` means to the agent."""

KIND_NAMES: Final = {**{e.code: e.kind for e in CATALOGUE}, CONTROL_CODE: "none"}
"""Every code the matrix and the playbook use, with its kind's name (``K01`` to
``wrong_upstream_port``; ``K00`` to the control, ``none``)."""
GLOSSARY: Final = {**{e.kind: e.glossary for e in CATALOGUE}, "none": CONTROL_GLOSSARY}
"""Every kind an agent may declare, the control included, with its meaning."""
SIGNATURES: Final = tuple(
    (e.kind, e.signature.pattern, e.signature.target)
    for e in sorted(CATALOGUE, key=lambda e: e.signature.rank)
)
"""(kind, regex, target) of every kind's signature line, in the order the heuristic tests them."""
DRIFT_KEYS: Final = tuple(
    (service, key, e.kind)
    for e in sorted(CATALOGUE, key=lambda e: e.drift.rank)
    for service, key in e.drift.keys
)
"""(service or ``*``, key glob, kind) of every key a drift of which points at a kind, in the
memorised baseline's priority order (a kind whose drift is a version, not a key, has none)."""

if tuple(GLOSSARY) != FAULT_KINDS:  # the Literal of srez_env.vocab is the type's copy of the names
    _msg = "the catalogue's kinds and srez_env.vocab.FAULT_KINDS differ"
    raise AssertionError(_msg)
