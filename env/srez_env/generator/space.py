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
from datetime import timedelta
from typing import Final

from srez_env.generator.matrix import BASE_VERSION, DEPLOY_KINDS, Json, Row, load
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
RELEASES: Final = {
    "gateway": ("5.2.2", "5.2.3", "5.3.0"),
    "auth": ("3.0.4", "3.0.5", "3.1.1"),
    "payments": ("2.4.2", "2.4.3", "2.6.0"),
    "cache": ("7.2.6", "7.2.7", "7.3.0"),
    "db": ("15.5", "15.6", "15.7"),
}
"""The versions a release of the hard tier ships, failing or harmless, after each service's
running one (none the matrix's rows ship: their versions would name them)."""
CHANGELOGS: Final = (
    "update translations",
    "bump dependencies",
    "move upstream calls to the new client pool",
    "structured logging fields",
    "finer latency buckets",
    "shorter token cache refresh",
    "retry budget per route",
    "new idempotency store",
)
"""What the hard tier's releases say they change, failing or harmless alike."""
ONSETS: Final = (12, 45)
"""The least and most minutes before T0 a hard incident of :data:`SUDDEN_KINDS` starts."""
SUDDEN_KINDS: Final = frozenset({"K01", "K02", "K03", "K04", "K06", "K08", "K10", "K11", "K12"})
"""The kinds that fail requests from the minute they are injected (a wrong port, a certificate,
a pool, a release, a resolver, a limit, a flag, a timeout), so their onset can be any: a leak, a
disk, a cold cache or a CPU limit builds up from the onset its row was tuned for."""
LATER_SERVICES: Final = ("auth", "cache", "db")
"""Where an incident of the hard tier gets a harmless release of a bystander
(:func:`_with_releases`): the first of these off the incident's path."""
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


DEPLOY_VARIANTS: Final = (("gateway", 0.2), ("gateway", 0.7), ("payments", 0.7))
"""(root, error rate) of the failing releases :func:`deploy_variants` adds: the gateway's at a
fifth of its requests (degraded) and at seven tenths (down), and payments' at seven tenths
(down). Each rate puts the release on a footprint three or more other answers make
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
    for service, rate in DEPLOY_VARIANTS:
        # the version and changelog are placeholders: a placed variant draws its own
        release, changelog = RELEASES[service][-1], CHANGELOGS[0]
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
    busy = set(donor.propagation) | {donor.root}
    # drawn from the pair alone, not the set: a pair's variant is one task everywhere (built
    # once per process), placed in each set's own worlds
    pair = f"{donor.id}>{slot.id}"
    donor = _with_releases(_redrawn_onset(donor, pair), busy, pair)
    effects = donor.decoy_effects
    events = donor.decoy_events
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
        calibration=(False, donor.calibration[1]),
        why={},
    )


def _redrawn_onset(donor: Row, pair: str) -> Row:
    """``donor`` with its onset drawn for the pair from :data:`ONSETS` when its kind takes hold
    at once (:data:`SUDDEN_KINDS`), its story's times moved with it: the failing release ships
    at the new onset, an expired certificate expires then. A row's onset is the same in every
    set, and the page says since when the SLO is breached, so the page's time would name the
    row among the answers of its footprint."""
    if donor.kind not in SUDDEN_KINDS:
        return donor
    low, high = ONSETS
    onset = low + _rng(0, pair, "onset").randrange(high - low + 1)
    expiry = load().t0 - timedelta(minutes=donor.onset)
    return replace(
        donor,
        onset=onset,
        versions=tuple(
            {**v, "minutes_before": onset}
            if v["service"] == donor.root and v["minutes_before"] == donor.onset
            else v
            for v in donor.versions
        ),
        certs=tuple(
            {**c, "not_after": load().t0 - timedelta(minutes=onset)}
            if c.get("not_after") == expiry
            else c
            for c in donor.certs
        ),
    )


def _redrawn_release(donor: Row, pair: str) -> Row:
    """``donor`` with its failing release's version and changelog drawn for the pair from
    :data:`RELEASES` and :data:`CHANGELOGS`, which the harmless releases draw from too: a row's
    own version and changelog are the same in every set, so a learner that read the deploy
    history of published sets would name the failing release by them."""
    rng = _rng(0, pair, "failing release")
    version = rng.choice(RELEASES[donor.root])
    changelog = rng.choice(CHANGELOGS)
    failing = next(
        (
            v
            for v in donor.versions
            if v["service"] == donor.root
            and donor.inject
            and v["version"] == donor.injected("deploy.version")
        ),
        None,
    )
    if failing is None:
        return donor
    old = failing["version"]
    drawn = {**failing, "version": version, "props": {**failing["props"], "changelog": changelog}}
    return replace(
        donor,
        versions=tuple(drawn if v is failing else v for v in donor.versions),
        inject=tuple(
            (s, k, version if (s, k) == (donor.root, "deploy.version") else v)
            for s, k, v in donor.inject
        ),
        decoy_events=tuple(
            {**e, "value": version, "text": e["text"].replace(f"-> {old} ", f"-> {version} ")}
            if e.get("kind") == "deploy" and e["service"] == donor.root and e.get("value") == old
            else e
            for e in donor.decoy_events
        ),
    )


def _with_releases(donor: Row, busy: set[str], pair: str) -> Row:
    """``donor`` with the releases every incident of the hard tier has, so that the deploy
    history names no answer and only its times against the onset tell (§6.20):

    * a failing release (:data:`DEPLOY_KINDS`) ships a version and changelog drawn from the
      pools harmless releases draw from (:func:`_redrawn_release`);
    * any other incident gets a harmless release of its root, 10 to 60 minutes before its
      onset or after it as often: a release on the failing service, or a recent one, is no
      sign by itself;
    * every incident gets a harmless release of the first of :data:`LATER_SERVICES` off its
      path, after the failing release when there is one. Without it a failing release was the
      newest deploy of the history, and "roll back the newest deploy" (the range calibrator's
      fallback, :mod:`srez_env.baselines.ranges`) passed it with no diagnosis."""
    rng = _rng(0, pair, "release")
    failing = donor.kind in DEPLOY_KINDS
    if failing:
        donor = _redrawn_release(donor, pair)
    elif donor.root not in {v["service"] for v in donor.versions}:
        # before the onset, or as often five minutes or more after it (the errors are there)
        after = donor.onset >= 11 and rng.random() < 0.5
        before = (
            3 + rng.randrange(donor.onset - 8) if after else donor.onset + 10 + rng.randrange(51)
        )
        donor = _released(donor, donor.root, before, rng)
    released = {v["service"] for v in donor.versions}
    free = [s for s in LATER_SERVICES if s not in busy | released]
    if free and donor.onset >= 8:
        # after the failing release, else anywhere in the hour and a half before T0
        latest = donor.onset - 5 if failing else donor.onset + 60
        donor = _released(donor, free[0], 3 + rng.randrange(latest), rng)
    return donor


def _released(donor: Row, service: str, before: int, rng: random.Random) -> Row:
    """``donor`` with a harmless release of ``service`` ``before`` minutes before T0 (its
    version and changelog drawn from :data:`RELEASES` and :data:`CHANGELOGS`)."""
    version, changelog = rng.choice(RELEASES[service]), rng.choice(CHANGELOGS)
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
        "text": f"deploy {service} {BASE_VERSION[service]} -> {version} (changelog: {changelog})",
        "value": version,
    }
    return replace(
        donor, versions=(*donor.versions, shipped), decoy_events=(*donor.decoy_events, event)
    )


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
