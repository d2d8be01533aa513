"""The hard tier as a space of incidents, not a list (docs/environment.md §6.20).

On the hard tier no fault writes its signature (§6.8), so what a hard task shows at T0 is the
footprint of its incident: which services fail and how badly. If every set put the same row in
the same hard slot, that footprint would still name the row, and a learner that remembered other
sets' footprints would answer without diagnosing. So each hard slot of a generated set draws its
incident from every fault row of the matrix (of the kinds the set asks for): the drawn row's own
story (its injection, fix, history and decoys) on the hard tier's profile, plus a batch job on a
bystander when the row brings no noise of its own, so that, as the hard tier requires, the loudest
anomaly is not the cause (§6.14). Footprints that several incidents share then map to several
answers across sets, and only the other tools tell them apart.

:func:`donors` orders the candidates for a slot by the set's seed; :func:`variant` makes the row
the generator places. A donor that yields no valid hard task within a few worlds is passed over,
and after :data:`DONORS_TRIED` of them the slot keeps its own row.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from srez_env.generator.matrix import Row

DONORS_TRIED: Final = 5
"""Donor rows tried for a hard slot before it keeps its own row."""
DONOR_WORLDS: Final = 4
"""Worlds drawn for one donor on a hard slot."""
BYSTANDER_JOBS: Final = (
    ("cache", "cache-warmer backfill", 960.0),
    ("db", "hourly reporting", 100.0),
)
"""(service, job, extra requests a second): load a service takes in any world without a fault,
and enough to be the loudest anomaly of its metrics."""


def _rng(set_seed: int, slot: str, what: str) -> random.Random:
    digest = hashlib.sha256(f"space:{set_seed}:{slot}:{what}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def donors(slot: Row, rows: Sequence[Row], set_seed: int) -> list[Row]:
    """The fault rows a hard ``slot`` may draw its incident from, in the set's order: one row of
    each (root, kind) answer among ``rows``' faults, the slot's own row excepted (it is the
    fallback)."""
    rng = _rng(set_seed, slot.id, "donors")
    classes: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if row.kind != "K00" and row.id != slot.id:
            classes.setdefault((row.root, row.kind), []).append(row)
    # one row per answer (root, kind), in a shuffled order: an answer with three rows in the
    # matrix is no likelier than one with one, so no answer is the safe guess for a footprint
    order = sorted(classes)
    rng.shuffle(order)
    return [classes[answer][rng.randrange(len(classes[answer]))] for answer in order]


def variant(donor: Row, slot: Row) -> Row:
    """``donor``'s incident in hard ``slot``: its story on the hard tier, named as the slot (so
    its worlds are the slot's), with a bystander's batch job when it brings no load of its own.
    Its calibration is what the calibrators compute (:func:`srez_env.generator.expand.build`
    with ``table=False``)."""
    effects = donor.decoy_effects
    events = donor.decoy_events
    if not effects:
        busy = set(donor.propagation) | {donor.root}
        free = [job for job in BYSTANDER_JOBS if job[0] not in busy]
        if free:
            # drawn from the pair alone, not the set: a pair's variant is one task everywhere
            # (built once per process), placed in each set's own worlds
            pair = f"{donor.id}>{slot.id}"
            service, job, rps = free[_rng(0, pair, "job").randrange(len(free))]
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
