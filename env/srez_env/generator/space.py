"""The hard tier as a space of incidents, not a list (docs/environment.md §6.20).

On the hard tier no fault writes its signature (§6.8), so what a hard task shows at T0 is the
footprint of its incident: which services fail and how badly. If every set put the same row in
the same hard slot, that footprint would still name the row, and a learner that remembered other
sets' footprints would answer without diagnosing. So each hard slot of a generated set draws its
incident from the set's :func:`incidents`: every fault row of the matrix (of the kinds the set
asks for), a wrong port on every edge no row has (:func:`port_variants`) and a failing release
on the services whose footprint other answers share (:func:`deploy_variants`). The drawn row's own
story (its injection, fix, history and decoys) goes on the hard tier's profile, plus a batch job
on a bystander when the row brings no noise of its own, so that, as the hard tier requires, the
loudest anomaly is not the cause (§6.14); :func:`fit_backfill` sizes the cache's job to each
world. Footprints that several incidents share then map to several answers across sets, and only
the other tools tell them apart.

:func:`answers` gives a slot the incidents of each answer (:func:`donors` the first of each);
the set's plan (:meth:`srez_env.generator.footprints.Table.plan`) says which answer, and on which
footprint, the slot aims for; :func:`variant` makes the row the generator places. An answer is
tried in :data:`LAPS` fresh sets of worlds (going round its rows) before the slot turns to its
footprint's other answers, and
after :data:`DONORS_TRIED` tries in all the slot keeps its own row. :func:`moved` (a row's
incident on another root) serves ``env/tools/reroot_probe.py``, which measured why the matrix's
other kinds moved to new roots stay out of the space (docs/environment.md §6.20).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from srez_env.generator.matrix import BASE_VERSION, Json, Row
from srez_env.sim.scenario import world_at_t0
from srez_env.task import Task
from srez_env.world.topology import BASE_REPLICAS, EDGES

DONORS_TRIED: Final = 24
"""Tries on a hard slot, over all the answers of its footprint, before it keeps its own row."""
LAPS: Final = 12
"""Tries of one answer on a hard slot (each in worlds of its own) before the slot turns to the
next answer of its footprint: an answer lands on a shared footprint in at least a tenth of its
tries, so twelve find it with a chance of 70 % or more."""
DONOR_WORLDS: Final = 4
"""Worlds drawn for one try of a donor on a hard slot."""
BYSTANDER_JOBS: Final = (
    ("cache", "cache-warmer backfill", 2500.0),
    ("db", "hourly reporting", 100.0),
)
"""(service, job, extra requests a second): load a service takes in any world without a fault,
and enough to be the loudest anomaly of its metrics; a variant takes the first whose service is
off its incident's path. The backfill is sized to out-shout a service whose own calls fail: the
error rate's z of a gateway or auth that cannot reach a dependency reaches about 80 at
worst-case noise, that of a payments failing every charge about 200, and the cache's CPU under
2500 more requests a second 400 or more. That is more than the cache of some worlds takes, so
:func:`fit_backfill` lowers it to what each world's cache has idle."""
BACKFILL_SHARE: Final = 0.35
"""The most of the cache's idle capacity the backfill takes in a world (:func:`fit_backfill`):
the cache's latency grows as 1/(1-u), so taking 35 % of what is idle leaves its p99 at most
1/0.65, about 1.5 times its own, under the twice that makes a service degraded."""
LATER_RELEASES: Final = (
    ("auth", "3.0.3", "update translations"),
    ("cache", "7.2.5", "update the allocator"),
    ("db", "15.5", "minor release: bug fixes"),
)
"""(service, release, changelog) of the harmless releases a failing release's variant gets after
it (:func:`variant`), the first off the incident's path."""
TYPICAL_PORT: Final = {"auth": 8080, "payments": 8080, "db": 5432, "cache": 6379}
"""The port each server listens on in the typical world, the matrix's terms."""


def _rng(set_seed: int, slot: str, what: str) -> random.Random:
    digest = hashlib.sha256(f"space:{set_seed}:{slot}:{what}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def draws(set_seed: int, slot: str) -> random.Random:
    """The draws of hard ``slot`` in the set of ``set_seed``: the order in which it tries the
    other answers of its footprint when the one it aims for shows another."""
    return _rng(set_seed, slot, "keep")


def callers_up(service: str) -> tuple[str, ...]:
    """``service`` and everything that calls it, directly or not, nearest first."""
    out = [service]
    for current in out:
        out += [e.client for e in EDGES if e.server == current and e.client not in out]
    return tuple(out)


def moved(row: Row, service: str) -> Row:
    """``row``'s incident with its root moved to ``service``: every name of the root in its
    injection, fix and certificates moved, and the propagation the topology gives."""
    old = row.root

    def name(text: str) -> str:
        return service if text == old else text

    def path(text: str) -> str:
        return text.replace(f"/{old}-", f"/{service}-")

    def action(act: Json) -> Json:
        args = dict(act["args"])
        args["service"] = name(args["service"])
        if isinstance(args.get("value"), str):
            args["value"] = path(args["value"])
        if act["tool"] == "scale":
            args["replicas"] = BASE_REPLICAS[service]
        return {**act, "args": args}

    return replace(
        row,
        root=service,
        inject=tuple((name(s), k, path(v)) for s, k, v in row.inject),
        fix=tuple(action(a) for a in row.fix),
        allowed=tuple(path(a.replace(f"{old}:", f"{service}:")) for a in row.allowed),
        restarts=tuple(name(s) for s in row.restarts),
        certs=tuple({**c, "path": path(c["path"])} for c in row.certs),
        propagation=callers_up(service),
        why={},
    )


def port_variants(rows: Sequence[Row]) -> list[Row]:
    """A wrong port on every edge of the topology whose client-side port no row of ``rows``
    injects: the story of the hard tier's client-side ``wrong_upstream_port`` row, on that
    edge's client and key (the client dials its dependency one port off; the fix puts the
    dependency's port back). The edges fail different services the same way the matrix's other
    kinds do (the gateway's calls to payments as payments' certificate, auth's to the db as a
    db that refuses auth), which is what a footprint needs to stop naming its answer (§6.20).
    Each is named after the row it came from and its edge, so that no slot takes it for itself."""
    template = next(
        (r for r in rows if r.kind == "K01" and r.tier == "H" and r.inject[0][1] != "server.port"),
        None,
    )
    if template is None:
        return []
    have = {(s, key) for r in rows if r.kind == "K01" for s, key, _ in r.inject}
    out: list[Row] = []
    for edge in EDGES:
        if (edge.client, edge.port_key) in have:
            continue
        right = TYPICAL_PORT[edge.server]
        variant = moved(template, edge.client)
        out.append(
            replace(
                variant,
                id=f"{template.id}:{edge.client}:{edge.port_key}",
                inject=((edge.client, edge.port_key, str(right + 1)),),
                fix=(
                    {
                        "tool": "set_config",
                        "args": {"service": edge.client, "key": edge.port_key, "value": str(right)},
                    },
                ),
                allowed=(f"{edge.client}:{edge.port_key}",),
            )
        )
    return out


DEPLOY_VARIANTS: Final = (
    ("gateway", 0.2, "5.3.0", "routing: move upstream calls to the new client pool"),
    ("gateway", 0.7, "5.3.0", "routing: move upstream calls to the new client pool"),
    ("payments", 0.7, "2.6.0", "charges: new idempotency store"),
)
"""(root, error rate, release, changelog) of the failing releases :func:`deploy_variants` adds:
the gateway's at a fifth of its requests (degraded) and at seven tenths (down), and payments' at
seven tenths (down). Each rate puts the release on a footprint three or more other answers make
(docs/environment.md §6.20); auth's release of the matrix is on auth's already."""


def deploy_variants(rows: Sequence[Row]) -> list[Row]:
    """A release that fails a share of its own requests on each root and at each rate of
    :data:`DEPLOY_VARIANTS`: the story of the matrix's failing-release row (a deploy at the onset,
    rolled back by the fix) on that root. On the hard tier a release's failures are logged as
    every fault's failing requests are (§6.8), so the gateway's looks like its rate limit, its
    port or its certificate, and payments' like its pool, its port or its resolver: what tells
    them apart is the deploy against the onset. Each is named after the row it came from, its
    root and its rate, so that no slot takes it for itself."""
    template = next(
        (
            r
            for r in rows
            if r.kind == "K06" and any("error_rate" in v["props"] for v in r.versions)
        ),
        None,
    )
    if template is None:
        return []
    out: list[Row] = []
    for service, rate, release, changelog in DEPLOY_VARIANTS:
        running = BASE_VERSION[service]
        shipped = {
            "service": service,
            "version": release,
            "minutes_before": template.onset,
            "props": {"error_rate": rate, "changelog": changelog},
        }
        out.append(
            replace(
                moved(template, service),
                id=f"{template.id}:{service}:{rate}",
                tier="H",
                inject=((service, "deploy.version", release),),
                fix=({"tool": "rollback", "args": {"service": service, "version": running}},),
                allowed=(f"{service}:deploy.version",),
                versions=(shipped,),
            )
        )
    return out


def incidents(rows: Sequence[Row]) -> list[Row]:
    """The incident space of ``rows``' faults: their own rows, the port variants and the
    release variants (the controls are not incidents)."""
    faults = [r for r in rows if r.kind != "K00"]
    return [*faults, *port_variants(faults), *deploy_variants(faults)]


def answers(slot: Row, rows: Sequence[Row], set_seed: int) -> dict[tuple[str, str], list[Row]]:
    """The incidents a hard ``slot`` may draw from, by (root, kind) answer of :func:`incidents`
    of ``rows`` (the slot's own row excepted: it is the fallback), the answers in the set's
    order and each answer's rows from one the set draws: the generator's tries of an answer go
    round its rows (a release failing a fifth of the gateway's requests shows another footprint
    than one failing seven tenths)."""
    rng = _rng(set_seed, slot.id, "donors")
    classes: dict[tuple[str, str], list[Row]] = {}
    for row in incidents(rows):
        if row.kind != "K00" and row.id != slot.id:
            classes.setdefault((row.root, row.kind), []).append(row)
    # the answers (root, kind) in a shuffled order: an answer with three rows in the matrix is
    # no likelier than one with one, so no answer is the safe guess for a footprint
    order = sorted(classes)
    rng.shuffle(order)
    out: dict[tuple[str, str], list[Row]] = {}
    for answer in order:
        first = rng.randrange(len(classes[answer]))
        out[answer] = classes[answer][first:] + classes[answer][:first]
    return out


def donors(slot: Row, rows: Sequence[Row], set_seed: int) -> list[Row]:
    """One incident of each answer of :func:`answers`, in the set's order: the first row of
    each."""
    return [mine[0] for mine in answers(slot, rows, set_seed).values()]


def variant(donor: Row, slot: Row) -> Row:
    """``donor``'s incident in hard ``slot``: its story on the hard tier, named as the slot (so
    its worlds are the slot's), with a bystander's batch job when it brings no load of its own.
    Its calibration is what the calibrators compute (:func:`srez_env.generator.expand.build`
    with ``table=False``)."""
    effects = donor.decoy_effects
    events = donor.decoy_events
    versions = donor.versions
    busy = set(donor.propagation) | {donor.root}
    # drawn from the pair alone, not the set: a pair's variant is one task everywhere (built
    # once per process), placed in each set's own worlds
    pair = f"{donor.id}>{slot.id}"
    if donor.kind == "K06":
        versions, events = _with_later_release(donor, busy, pair)
    if not effects:
        free = [job for job in BYSTANDER_JOBS if job[0] not in busy]
        if free:
            service, job, rps = free[0]
            start = donor.onset + 5 + _rng(0, pair, "start").randrange(30)
            effects = (
                *effects,
                {
                    "service": service,
                    "effect": "extra_rps",
                    "value": rps,
                    "from_min": -start,
                    "to_min": 600,
                },
            )
            text = f"job started: {job} (by batch-scheduler)"
            event = {"minutes_before": start, "service": service, "kind": "job", "text": text}
            events = (*events, event)
    return replace(
        donor,
        id=slot.id,
        tier="H",
        decoy_effects=effects,
        decoy_events=events,
        versions=versions,
        calibration=(False, donor.calibration[1]),
        why={},
    )


def _with_later_release(
    donor: Row, busy: set[str], pair: str
) -> tuple[tuple[Json, ...], tuple[Json, ...]]:
    """``donor``'s releases and decoy events with a harmless release of a bystander (the first
    of :data:`LATER_RELEASES` off the incident's path and not released already) between the
    failing release and T0. Without it the failing release would be the newest deploy of the
    history, and "roll back the newest deploy" would pass every failing release of the hard
    tier with no diagnosis (the range calibrator's fallback, :mod:`srez_env.baselines.ranges`)."""
    released = {v["service"] for v in donor.versions}
    free = [r for r in LATER_RELEASES if r[0] not in busy | released]
    if not free or donor.onset < 8:
        return donor.versions, donor.decoy_events
    service, version, changelog = free[0]
    before = 3 + _rng(0, pair, "release").randrange(donor.onset - 5)
    running = BASE_VERSION[service]
    shipped = {
        "service": service,
        "version": version,
        "minutes_before": before,
        "props": {"changelog": changelog},
    }
    event = {
        "minutes_before": before,
        "service": service,
        "kind": "deploy",
        "text": f"deploy {service} {running} -> {version} (changelog: {changelog})",
        "value": version,
    }
    return (*donor.versions, shipped), (*donor.decoy_events, event)


def fit_backfill(task: Task) -> Task:
    """``task`` with the cache's backfill (the job :func:`variant` adds) fit to its world: at
    most :data:`BACKFILL_SHARE` of the capacity the cache leaves idle before the incident, so a
    weak cache takes less than the job's full load rather than turning degraded (which refused
    the world). The load at the minute the loudest calibrator takes its baseline (150 before T0)
    sets the idle capacity."""
    nominal = next(rps for service, _, rps in BYSTANDER_JOBS if service == "cache")
    effects = task.noise.decoy_effects
    # the backfill is the cache's extra load at the job's full value: no row's own story has one
    jobs = [
        i
        for i, e in enumerate(effects)
        if e.service == "cache" and e.effect == "extra_rps" and e.value == nominal
    ]
    if not jobs:
        return task
    cache = world_at_t0(task).snapshot(-150)["cache"]
    if cache.u <= 0:
        return task
    idle = (1 - cache.u) * cache.rps / cache.u
    value = min(nominal, float(round(BACKFILL_SHARE * idle, -1)))
    if value == nominal:
        return task
    sized = [
        e.model_copy(update={"value": value}) if i in jobs else e for i, e in enumerate(effects)
    ]
    noise = task.noise.model_copy(update={"decoy_effects": sized})
    return task.model_copy(update={"noise": noise})
