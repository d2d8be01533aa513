"""Footprints several answers share (docs/environment.md §6.20): the table's chances keep each
answer of a shared footprint as often as the others, the packaged table is the one the engine
gives today, and a generated set's drawn hard tasks show only shared footprints."""

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


def test_each_answer_of_a_shared_footprint_is_kept_as_often_as_the_others() -> None:
    tries = {"a/K01": 20, "b/K02": 20, "c/K03": 20, "d/K04": 10}
    hits = {F1: {"a/K01": 20, "b/K02": 8, "c/K03": 2, "d/K04": 5}, F2: {"a/K01": 10}}
    table = footprints.shared(tries, hits)
    kept = {answer: hits[F1][answer] / tries[answer] * table.keep(answer, F1) for answer in tries}
    # every answer lands on F1 and is then kept with the same overall chance: the rarest's rate
    assert kept == pytest.approx(dict.fromkeys(tries, 0.1))
    assert table.keep("c/K03", F1) == 1.0  # the rarest is always kept
    assert table.keep("a/K01", F2) == 0.0  # one answer alone: F2 names it, so it is never kept
    assert table.best("a/K01") == pytest.approx(0.1)
    assert table.best("e/K05") == 0.0


def test_a_footprint_shared_by_more_answers_is_drawn_more_often() -> None:
    """Each answer of a footprint of n answers is kept in proportion to n, so the footprint is
    drawn in proportion to n squared: its tasks leave a learner more guesses."""
    tries = dict.fromkeys(["a/K01", "b/K02", "c/K03", "d/K04", "e/K05"], 10)
    hits = {
        F1: {"a/K01": 10, "b/K02": 5, "c/K03": 2},
        F2: {"a/K01": 10, "b/K02": 10, "d/K04": 4, "e/K05": 10},
    }
    table = footprints.shared(tries, hits)
    kept = {
        seen: {a: n / tries[a] * table.keep(a, seen) for a, n in counts.items()}
        for seen, counts in hits.items()
    }
    assert kept[F1] == pytest.approx(dict.fromkeys(hits[F1], kept[F1]["c/K03"]))
    assert kept[F2] == pytest.approx(dict.fromkeys(hits[F2], kept[F1]["c/K03"] * 4 / 3))
    assert max(c for chances in table.chances.values() for c in chances.values()) == 1.0


def test_an_answer_rarer_than_the_floor_is_not_one_of_its_footprints_answers() -> None:
    tries = {"a/K01": 100, "b/K02": 100, "c/K03": 100}
    rare = int(footprints.RATE_FLOOR * 100) - 1
    table = footprints.shared(tries, {F1: {"a/K01": 50, "b/K02": 50, "c/K03": rare}})
    # without the rare answer two are left, under MIN_ANSWERS: the footprint is not shared
    assert footprints.MIN_ANSWERS == 3
    assert table.chances == {}


def test_a_table_file_round_trips_and_another_format_is_refused() -> None:
    tries = Counter({"a/K01": 10, "b/K02": 10, "c/K03": 10})
    hits = {F1: Counter({"a/K01": 10, "b/K02": 5, "c/K03": 2})}
    witness = {F1: (11, "sre-002", "sre-010", "sre-b-003")}
    data = json.loads(json.dumps(footprints.to_json([11], tries, hits, witness)))
    assert footprints.from_json(data) == footprints.shared(tries, hits)
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
    assert len(table.chances) >= 3
    rows = {row.id: row for row in space.incidents(ROWS)}
    checked = 0
    for entry in data["footprints"]:  # type: ignore[attr-defined]
        seen = frozenset(entry["features"])
        if seen not in table.chances:
            continue
        seed, slot, donor, task_id = entry["witness"]
        task = sets.donor_task(rows[donor], rows[slot], seed, task_id, 0)
        assert footprints.footprint(task) == seen, (slot, donor, seed)
        checked += 1
    assert checked == len(table.chances)


@pytest.mark.parametrize("seed", [61])
def test_a_generated_sets_drawn_hard_tasks_show_only_shared_footprints(seed: int) -> None:
    """Each hard slot of the set draws a task whose footprint at least three answers share, or
    keeps its own row; the table's balance is what the benchmark card's learners measure."""
    table = footprints.table()
    kept = 0
    slots = [r for r in ROWS if r.tier == "H" and r.kind != "K00"]
    for n, slot in enumerate(slots):
        task = sets._drawn(slot, ROWS, seed, sets.member_id(seed, n))
        if task is None:
            continue
        seen = footprints.footprint(task)
        root = task.ground_truth.root_cause
        answer = next(
            footprints.answer_key(r.root, r.kind)
            for r in space.incidents(ROWS)
            if r.root == root.service and matrix.KIND_NAMES[r.kind] == root.fault
        )
        assert table.keep(answer, seen) > 0, (slot.id, answer, sorted(seen))
        kept += 1
    assert kept >= len(slots) - 1


def test_a_set_of_kinds_that_share_no_footprint_keeps_its_hard_rows_at_once() -> None:
    """A set asked for kinds none of whose answers the table keeps (a memory leak, a full disk)
    cannot draw a hard task: each hard slot keeps its own row without trying a donor."""
    rows = sets.select_rows(["memory_leak", "disk_full"], None)
    hard = [r for r in rows if r.tier == "H" and r.kind != "K00"]
    assert hard
    for slot in hard:
        assert sets._drawn(slot, rows, 99, "sre-x-001") is None


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
