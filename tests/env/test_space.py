"""The hard tier's incident space (docs/environment.md §6.20): a hard slot draws one row per
(root, kind) answer in a seeded order, and a drawn row keeps its own story under the slot's name,
with a bystander's batch job when it brings no load of its own."""

from __future__ import annotations

from datetime import timedelta

import pytest

from srez_env.baselines.diagnostician import DiagnosticianAgent
from srez_env.generator import footprints, matrix, sets, space
from srez_env.grade import grade_episode
from srez_env.play import play_episode
from srez_env.sim.scenario import world_at_t0
from srez_env.telemetry.status import status_of
from srez_env.world.topology import EDGES

ROWS = matrix.load().rows
SLOT = next(r for r in ROWS if r.tier == "H" and r.kind != "K00")


def test_a_slot_draws_one_row_per_answer_in_the_sets_order() -> None:
    drawn = space.donors(SLOT, ROWS, 777)
    answers = [(r.root, r.kind) for r in drawn]
    assert len(answers) == len(set(answers))
    space_rows = space.incidents(ROWS)
    assert set(answers) == {(r.root, r.kind) for r in space_rows if r.id != SLOT.id}
    assert SLOT not in drawn and all(r.kind != "K00" for r in drawn)
    assert space.donors(SLOT, ROWS, 777) == drawn  # reproducible from the seed
    assert [r.id for r in space.donors(SLOT, ROWS, 778)] != [r.id for r in drawn]


def test_a_wrong_port_is_drawn_on_every_edge_of_the_topology() -> None:
    """The space holds a wrong port on every edge's client (§6.20): the matrix's own K01 rows
    and one variant for each edge no row injects, each an incident the rules see on that edge
    alone, with a fix that puts the dependency's port back."""
    rows = space.incidents(ROWS)
    ported = {(s, key) for r in rows if r.kind == "K01" for s, key, _ in r.inject}
    assert {(e.client, e.port_key) for e in EDGES} <= ported
    variants = space.port_variants(ROWS)
    assert variants and len({r.id for r in rows}) == len(rows)
    for row in variants:
        ((client, key, wrong),) = row.inject
        (fix,) = row.fix
        edge = next(e for e in EDGES if (e.client, e.port_key) == (client, key))
        assert row.root == client and row.tier == "H" and row.kind == "K01"
        assert fix["args"] == {"service": client, "key": key, "value": str(int(wrong) - 1)}
        assert int(wrong) - 1 == space.TYPICAL_PORT[edge.server]
        assert row.allowed == (f"{client}:{key}",)
        assert row.propagation[0] == client and row.propagation[-1] in ("gateway", "payments")
    assert space.port_variants([r for r in ROWS if r.kind != "K01"]) == []


def test_a_port_variant_is_placed_as_a_hard_task_of_its_edge() -> None:
    """auth dialling the db one port off, placed in a hard slot: the rules see that edge alone,
    the cache's backfill (not auth) is the loudest anomaly, and only the fix the variant names
    clears it (the oracle passes)."""
    variant = next(r for r in space.port_variants(ROWS) if r.root == "auth")
    task = sets.realise(
        space.variant(variant, SLOT), 11, None, space.DONOR_WORLDS, exposed_ok=False
    )
    assert task.difficulty == "hard" and task.ground_truth.root_cause.service == "auth"
    assert task.calibration.loudest_expected == "cache"
    assert [(a.args["service"], a.args["key"]) for a in task.reference_fix] == [("auth", "db.port")]


def test_a_failing_release_is_drawn_on_the_gateway_and_payments() -> None:
    """The space holds a failing release on the gateway (a fifth and seven tenths of its
    requests) and on payments (seven tenths), §6.20: the story of the matrix's release row on
    that root, a deploy at the onset and a rollback to the version the root ran before."""
    variants = space.deploy_variants(ROWS)
    assert [(r.root, r.versions[0]["props"]["error_rate"]) for r in variants] == [
        (root, rate) for root, rate in space.DEPLOY_VARIANTS
    ]
    assert len({r.id for r in space.incidents(ROWS)}) == len(space.incidents(ROWS))
    for row in variants:
        (release,) = row.versions
        assert row.kind == "K06" and row.tier == "H" and row.id not in {r.id for r in ROWS}
        assert row.inject == ((row.root, "deploy.version", release["version"]),)
        assert release["minutes_before"] == row.onset and release["service"] == row.root
        assert row.fix == (
            {
                "tool": "rollback",
                "args": {"service": row.root, "version": matrix.BASE_VERSION[row.root]},
            },
        )
        assert row.allowed == (f"{row.root}:deploy.version",) and row.restarts == (row.root,)
        assert row.propagation == space.callers_up(row.root)
    assert space.deploy_variants([r for r in ROWS if r.kind != "K06"]) == []


@pytest.mark.parametrize("index", range(len(space.DEPLOY_VARIANTS)))
def test_a_failing_release_shows_a_footprint_other_answers_share(index: int) -> None:
    """Each release variant, placed in a hard slot as a donor is, shows a shared footprint of the
    table among whose answers it is (that is what it was added for), and the diagnostician, which
    reads the deploy against the onset, finds it and rolls it back."""
    variant = space.deploy_variants(ROWS)[index]
    answer = footprints.answer_key(variant.root, variant.kind)
    task = None
    for lap in range(8):  # a release lands on its footprint in about half of its tries
        try:
            task = sets.donor_task(variant, SLOT, 101, "sre-abcdef-009", lap)
            break
        except sets.GenerationError:
            continue
    assert task is not None, variant.id
    seen = footprints.footprint(task)
    assert answer in footprints.table().answers.get(seen, ()), (variant.id, sorted(seen))
    assert task.difficulty == "hard" and task.ground_truth.root_cause.service == variant.root
    graded = grade_episode(play_episode(task, DiagnosticianAgent(), name="d").record())
    assert graded.passed, variant.id


def test_a_variant_is_the_donors_incident_on_the_hard_tier_under_the_slots_name() -> None:
    donor = next(r for r in ROWS if r.tier == "E" and not r.decoy_effects and r.root == "payments")
    made = space.variant(donor, SLOT)
    assert (made.id, made.tier) == (SLOT.id, "H")
    assert (made.root, made.kind, made.inject, made.fix) == (
        donor.root,
        donor.kind,
        donor.inject,
        donor.fix,
    )
    assert made.calibration[0] is False and made.why == {}
    (effect,) = made.decoy_effects
    assert effect["service"] not in {donor.root, *donor.propagation}
    # the cache's backfill whenever the cache is off the path: the loudest job of the two
    assert effect["service"] == ("db" if "cache" in donor.propagation else "cache")
    assert effect["effect"] == "extra_rps" and effect["to_min"] == 600
    job = made.decoy_events[-1]
    assert job["kind"] == "job" and job["minutes_before"] == -effect["from_min"]
    assert job["service"] == effect["service"]


def test_every_quiet_incident_gets_the_loudest_job_off_its_path() -> None:
    """Over the whole space: an incident with no load of its own gets the cache's backfill
    unless its path runs through the cache, then the db's reporting job, never a job on its own
    path (the hard tier needs the loudest anomaly to be a bystander's, §6.14)."""
    quiet = [r for r in space.incidents(ROWS) if not r.decoy_effects]
    assert len(quiet) > 10
    for donor in quiet:
        busy = {donor.root, *donor.propagation}
        jobs = [e["service"] for e in space.variant(donor, SLOT).decoy_effects]
        free = [service for service, _, _ in space.BYSTANDER_JOBS if service not in busy]
        assert jobs == free[:1], donor.id


def test_a_variant_with_load_of_its_own_gets_no_job() -> None:
    donor = next(r for r in ROWS if r.decoy_effects)
    made = space.variant(donor, SLOT)
    assert made.decoy_effects == donor.decoy_effects
    own = len(donor.decoy_events)
    assert made.decoy_events[:own] == donor.decoy_events
    assert all(e["kind"] == "deploy" for e in made.decoy_events[own:])  # releases, no job


def test_no_release_of_the_hard_tier_names_its_answer() -> None:
    """Over the whole space (§6.20): a failing release ships a version and changelog from the
    pools the harmless releases draw from, and a harmless release of a bystander follows it (so
    it is never the newest deploy); every other incident gets a harmless release of its root
    well before its onset (so a release on the failing service is no sign by itself). Only the
    times against the onset tell."""
    failing_seen = set()
    for donor in space.incidents(ROWS):
        made = space.variant(donor, SLOT)
        deploys = {e["service"]: e for e in made.decoy_events if e["kind"] == "deploy"}
        if donor.kind == "K06":
            (version,) = [v for s, k, v in made.inject if k == "deploy.version"]
            shipped = next(v for v in made.versions if v["version"] == version)
            assert version in space.RELEASES[donor.root], donor.id
            assert shipped["props"]["changelog"] in space.CHANGELOGS
            assert shipped["minutes_before"] == made.onset
            later = [e for s, e in deploys.items() if s != donor.root]
            assert any(e["minutes_before"] < made.onset for e in later), donor.id
            failing_seen.add(version)
        elif donor.kind != "K05" and donor.root not in {v["service"] for v in donor.versions}:
            release = deploys[donor.root]
            assert release["value"] in space.RELEASES[donor.root], donor.id
            before = release["minutes_before"]
            assert before <= made.onset - 5 or made.onset + 10 <= before <= made.onset + 60
    matrix_versions = {v["version"] for r in ROWS for v in r.versions}
    assert failing_seen and not failing_seen & matrix_versions


@pytest.mark.slow
def test_every_donor_on_a_hard_slot_gives_a_task_or_a_refusal() -> None:
    """A drawn incident either verifies or is refused with the generator's own errors, which
    realise_slot passes over; nothing else escapes (a loudest calibrator that blames no one once
    raised a KeyError here)."""
    slot = next(r for r in ROWS if r.id == "sre-002")
    made = 0
    for donor in ROWS:
        if donor.kind == "K00" or donor.id == slot.id:
            continue
        try:
            task = sets.realise(
                space.variant(donor, slot), 999, "sre-abcdef-002", 2, exposed_ok=False
            )
        except (sets.GenerationError, ValueError):
            continue
        made += 1
        assert task.difficulty == "hard" and task.noise.fault_lines == "generic"
        assert task.ground_truth.root_cause.service == donor.root
    assert made >= 3


def test_the_backfill_takes_no_more_than_its_share_of_a_weak_cache() -> None:
    """A drawn incident's backfill is fit to its world (space.fit_backfill): the job's full load
    where the cache has room for it, and no more than BACKFILL_SHARE of what the cache leaves idle
    where it has not, so that the cache stays healthy and the world is not refused for it."""
    variant = next(r for r in space.port_variants(ROWS) if r.root == "auth")
    nominal = space.BYSTANDER_JOBS[0][2]
    seen = set()
    for seed in (11, 999):  # a strong cache, then a weak one (seed 999 refused all but one
        # donor of a slot when the job was the full load everywhere)
        task = sets.realise(space.variant(variant, SLOT), seed, None, 4, exposed_ok=False)
        (job,) = task.noise.decoy_effects
        cache = world_at_t0(task).snapshot(-150)["cache"]
        idle = (1 - cache.u) * cache.rps / cache.u
        assert job.value == min(nominal, round(space.BACKFILL_SHARE * idle, -1))
        assert status_of(world_at_t0(task).snapshot(0))["cache"] == "healthy"
        seen.add(job.value == nominal)
    assert seen == {True, False}


def test_a_try_aimed_at_a_footprint_keeps_only_a_world_that_shows_it() -> None:
    """sets.donor_task with an aim passes over the worlds whose task shows another footprint
    (before verifying them): payments' failing release, aimed at the footprint it makes, gives a
    task with that footprint; aimed at the gateway's own degraded footprint, which it never makes,
    it is refused with the generator's error and says why."""
    release = next(r for r in space.deploy_variants(ROWS) if r.root == "payments")
    table = footprints.table().answers
    mine = next(seen for seen, answers in table.items() if "payments/K06" in answers)
    other = next(seen for seen, answers in table.items() if "payments/K06" not in answers)
    made = None
    for lap in range(8):
        try:
            made = sets.donor_task(release, SLOT, 101, "sre-abcdef-009", lap, mine)
            break
        except sets.GenerationError:
            continue
    assert made is not None and footprints.footprint(made) == mine
    with pytest.raises(sets.GenerationError, match="another footprint"):
        sets.donor_task(release, SLOT, 101, "sre-abcdef-009", 0, other)


def test_a_sudden_incident_starts_when_its_slot_draws() -> None:
    """A row's onset is the same in every set, and the page says since when the SLO is
    breached: on the hard tier an incident that takes hold at once starts at a minute drawn for
    its slot (space.ONSETS), its story moved with it (an expired certificate expires then, a
    failing release ships then), so the page's time names no answer of a footprint."""
    slots = [r for r in ROWS if r.tier == "H" and r.kind != "K00"]
    low, high = space.ONSETS
    for donor in space.incidents(ROWS):
        if donor.kind not in space.SUDDEN_KINDS:
            assert {space.variant(donor, slot).onset for slot in slots} == {donor.onset}
            continue
        onsets = set()
        for slot in slots:
            made = space.variant(donor, slot)
            onsets.add(made.onset)
            expiry = matrix.load().t0 - timedelta(minutes=made.onset)
            assert all(c["not_after"] == expiry for c in made.certs), donor.id
            if donor.kind == "K06":
                assert any(v["minutes_before"] == made.onset for v in made.versions)
        assert len(onsets) >= 6 and low <= min(onsets) and max(onsets) <= high, donor.id
