"""The hard tier's incident space (docs/environment.md §6.20): a hard slot draws one row per
(root, kind) answer in a seeded order, and a drawn row keeps its own story under the slot's name,
with a bystander's batch job when it brings no load of its own."""

from __future__ import annotations

import pytest

from srez_env.generator import matrix, sets, space

ROWS = matrix.load().rows
SLOT = next(r for r in ROWS if r.tier == "H" and r.kind != "K00")


def test_a_slot_draws_one_row_per_answer_in_the_sets_order() -> None:
    drawn = space.donors(SLOT, ROWS, 777)
    answers = [(r.root, r.kind) for r in drawn]
    assert len(answers) == len(set(answers))
    assert set(answers) == {(r.root, r.kind) for r in ROWS if r.kind != "K00" and r.id != SLOT.id}
    assert SLOT not in drawn and all(r.kind != "K00" for r in drawn)
    assert space.donors(SLOT, ROWS, 777) == drawn  # reproducible from the seed
    assert [r.id for r in space.donors(SLOT, ROWS, 778)] != [r.id for r in drawn]


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
    assert effect["effect"] == "extra_rps" and effect["to_min"] == 600
    job = made.decoy_events[-1]
    assert job["kind"] == "job" and job["minutes_before"] == -effect["from_min"]
    assert job["service"] == effect["service"]


def test_a_variant_with_load_of_its_own_gets_no_job() -> None:
    donor = next(r for r in ROWS if r.decoy_effects)
    made = space.variant(donor, SLOT)
    assert made.decoy_effects == donor.decoy_effects and made.decoy_events == donor.decoy_events


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
