"""Footprints several answers share (docs/environment.md §6.20): a set's plan gives each shared
footprint its slots and goes round its answers, the packaged table is the one the engine gives
today, and a generated set's hard slots show the footprints the plan aims them at."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

from srez_env.baselines.learners import signature
from srez_env.generator import footprints, matrix, sets, space
from srez_env.tasks import load_tasks

ROWS = matrix.load().rows
F1 = frozenset(
    {"status:gateway:degraded", "log:gateway:ERROR POST /checkout -> # (upstream error)"}
)
F2 = frozenset({"status:gateway:down"})
TOOL = Path(__file__).parents[2] / "env" / "tools" / "footprint_table.py"


F3 = frozenset({"status:payments:down"})
F4 = frozenset({"status:auth:degraded"})
TABLE = footprints.Table(
    {
        F1: ("a/K01", "b/K02", "c/K03", "d/K04", "e/K05"),
        F2: ("a/K01", "f/K06", "g/K07"),
        F3: ("h/K08", "i/K09", "j/K10"),
        F4: ("b/K02", "k/K11", "l/K12"),
    }
)
KINDS = {f"K{n:02d}" for n in range(1, 13)}


def test_a_plan_gives_footprints_slots_by_the_square_of_their_answers() -> None:
    """Thirteen slots over footprints of 5, 3, 3 and 3 answers: 25/52 of them to the first
    (6.25), 9/52 to each other (2.25), the slot the floors leave to one of them."""
    plan = TABLE.plan(7, 13, KINDS)
    assert len(plan) == 13
    per = Counter(seen for seen, _ in plan)
    assert per[F1] in (6, 7) and all(per[f] in (2, 3) for f in (F2, F3, F4))
    assert sum(per.values()) == 13
    for seen, answers in TABLE.answers.items():
        taken = Counter(answer for aim, answer in plan if aim == seen)
        assert set(taken) <= set(answers)
        # round its answers: none twice before every one once
        assert max(taken.values()) - min(taken[a] for a in answers) <= 1
    assert plan == TABLE.plan(7, 13, KINDS)
    assert plan != TABLE.plan(8, 13, KINDS)


def test_a_plan_leaves_out_a_footprint_the_sets_kinds_do_not_share() -> None:
    kinds = KINDS - {"K08"}  # F3 keeps two answers: not shared in this set
    assert {seen for seen, _ in TABLE.plan(7, 13, kinds)} == {F1, F2, F4}
    assert TABLE.plan(7, 13, {"K01", "K08"}) == []
    assert TABLE.plan(7, 0, KINDS) == []


def test_an_answer_rarer_than_the_floor_is_not_one_of_its_footprints_answers() -> None:
    tries = {"a/K01": 100, "b/K02": 100, "c/K03": 100}
    rare = int(footprints.RATE_FLOOR * 100) - 1
    assert footprints.MIN_ANSWERS == 3
    table = footprints.shared(tries, {F1: {"a/K01": 50, "b/K02": 50, "c/K03": rare}})
    assert table.answers == {}  # two left, under MIN_ANSWERS: not shared
    table = footprints.shared(tries, {F1: {"a/K01": 50, "b/K02": 50, "c/K03": rare + 1}})
    assert table.answers == {F1: ("a/K01", "b/K02", "c/K03")}


def test_a_table_file_round_trips_and_another_format_is_refused() -> None:
    tries = Counter({"a/K01": 10, "b/K02": 10, "c/K03": 10})
    hits = {F1: Counter({"a/K01": 10, "b/K02": 5, "c/K03": 2})}
    witness = {F1: (11, "sre-002", "sre-010", "sre-b-003")}
    data = json.loads(json.dumps(footprints.to_json([11], tries, hits, witness)))
    assert footprints.from_json(data) == footprints.shared(tries, hits)
    assert footprints.from_json(data).answers == {F1: ("a/K01", "b/K02", "c/K03")}
    with pytest.raises(ValueError, match="footprint table format must be srez-footprints/1"):
        footprints.from_json({**data, "format": "srez-footprints/0"})


def test_a_footprint_leaves_out_the_budget_and_the_worlds_harmless_warnings() -> None:
    task = next(t for t in load_tasks() if t.difficulty == "hard" and t.fault_kind != "none")
    noisy = task.model_copy(
        update={"noise": task.noise.model_copy(update={"decoy_logs": list(sets.decoy_log_pool())})}
    )
    seen = footprints.footprint(noisy)
    assert seen == footprints.footprint(task)
    assert not any(f.startswith("budget:") for f in seen)
    assert signature(noisy) - seen  # what was left out is in the learner's signature


def _packaged() -> dict[str, object]:
    text = resources.files(footprints.__package__).joinpath("footprints.json").read_text()
    data: dict[str, object] = json.loads(text)
    return data


def test_the_packaged_table_is_the_one_the_engine_gives_today() -> None:
    """Every shared footprint's witness (the first task of the survey to show it) is made again
    and shows it still: a change to the engine, the logs or the space that moves a footprint
    fails here until ``python env/tools/footprint_table.py`` is rerun."""
    data = _packaged()
    table = footprints.table()
    assert len(table.answers) >= 3
    rows = {row.id: row for row in space.incidents(ROWS)}
    checked = 0
    for entry in data["footprints"]:  # type: ignore[attr-defined]
        seen = frozenset(entry["features"])
        if seen not in table.answers:
            continue
        seed, slot, donor, task_id = entry["witness"]
        task = sets.donor_task(rows[donor], rows[slot], seed, task_id, 0)
        assert footprints.footprint(task) == seen, (slot, donor, seed)
        checked += 1
    assert checked == len(table.answers)


@pytest.mark.parametrize("seed", [61])
def test_a_generated_sets_hard_slots_show_the_footprints_its_plan_aims_them_at(seed: int) -> None:
    """Each hard slot of the set shows the shared footprint its plan aims it at, with the
    answer aimed for or another of that footprint's, or keeps its own row (at most one does)."""
    table = footprints.table()
    slots = [r for r in ROWS if r.tier == "H" and r.kind != "K00"]
    plan = table.plan(seed, len(slots), {r.kind for r in ROWS})
    kinds = {name: code for code, name in matrix.KIND_NAMES.items()}
    kept = 0
    for n, slot in enumerate(slots):
        task = sets._drawn(slot, ROWS, seed, sets.member_id(seed, n), 0)
        if task is None:
            continue
        aim, _ = plan[n]
        root = task.ground_truth.root_cause
        assert footprints.footprint(task) == aim, slot.id
        assert footprints.answer_key(root.service, kinds[root.fault]) in table.answers[aim]
        kept += 1
    assert kept >= len(slots) - 1


def test_a_set_of_kinds_that_share_no_footprint_keeps_its_hard_rows_at_once() -> None:
    """A set asked for kinds that share no footprint (a memory leak, a full disk) has no plan:
    each hard slot keeps its own row without trying a donor."""
    rows = sets.select_rows(["memory_leak", "disk_full"], None)
    hard = [r for r in rows if r.tier == "H" and r.kind != "K00"]
    assert hard
    for slot in hard:
        assert sets._drawn(slot, rows, 99, "sre-x-001", 0) is None


@pytest.mark.slow
def test_the_survey_of_one_set_writes_a_table_the_generator_reads(tmp_path: Path) -> None:
    """``env/tools/footprint_table.py`` on one seed: every donor on every hard slot is tried
    once, and the file it writes is a table whose witnesses the test above could make again."""
    spec = importlib.util.spec_from_file_location("footprint_table", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    out = tmp_path / "footprints.json"
    assert tool.main(["--seeds", "101", "--jobs", "1", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    hard = [r for r in ROWS if r.tier == "H" and r.kind != "K00"]
    donors = sum(len(space.donors(slot, sets._fault_rows(ROWS), 101)) for slot in hard)
    assert sum(data["tries"].values()) == donors
    packaged = _packaged()
    # the packaged table's survey of seed 101 is the same survey: its counts are part of it
    for entry in data["footprints"]:
        same = [e for e in packaged["footprints"] if e["features"] == entry["features"]]  # type: ignore[attr-defined]
        (mine,) = same
        assert all(mine["hits"][a] >= n for a, n in entry["hits"].items())
    footprints.from_json(data)
