"""Results carry their provenance (task set, srez and grade versions, task digests), and
``srez eval`` refuses to merge runs whose scores do not compare into one leaderboard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srez_client.cli import main
from srez_client.results.finder import find_results
from srez_client.results.provenance import (
    IncompatibleResults,
    Scored,
    check_mergeable,
    leaderboard_provenance,
    release,
)
from srez_daemon.protocol import Provenance
from srez_env.generator.sets import CANONICAL_SEED, generate
from srez_env.generator.worlds import GENERATOR
from srez_env.grade import GRADE_SCHEMA_VERSION
from srez_env.provenance import (
    packaged_set_digest,
    task_digest,
    task_provenance,
    task_set_digest,
    task_set_kind,
)
from srez_env.tasks import load_tasks

CANONICAL = Provenance(
    task_set="canonical",
    generator=GENERATOR,
    task_set_seed=CANONICAL_SEED,
    task_digest="00aa",
    task_set_digest="0123456789abcdef",
    srez_version="0.1.0",
    grade_version=2,
)


def scored(task_id: str = "sre-001", **changes: object) -> Scored:
    return Scored(f"{task_id} {changes}", task_id, CANONICAL.model_copy(update=changes))


def test_the_task_set_is_named_from_the_content_not_the_world_block() -> None:
    (task,) = load_tasks(["sre-007"])
    assert task_set_kind(task) == "canonical"
    edited = task.model_copy(update={"max_steps": task.max_steps + 5})
    assert task_set_kind(edited) == "custom"  # its world block still says the canonical seed
    assert task_set_kind(task.model_copy(update={"world": None})) == "custom"
    fresh = generate(seed=7, count=2)
    assert [task_set_kind(t) for t in fresh] == ["generated", "generated"]
    recorded = task_provenance(fresh[0])
    assert recorded["task_set_seed"] == 7 and recorded["task_digest"] == task_digest(fresh[0])
    assert recorded["task_set_digest"] is None  # a task handed over alone: its set is not known
    assert task_provenance(fresh[0], task_set_digest(fresh))["task_set_digest"] == (
        task_set_digest(reversed(fresh))  # the set, whatever the order
    )
    assert task_provenance(task)["task_set_digest"] == packaged_set_digest()
    assert task_digest(edited) != task_digest(task)


def test_runs_of_one_release_grade_and_content_merge() -> None:
    runs = [scored(), scored("sre-002", task_digest="00bb"), scored(srez_version="0.1.7")]
    check_mergeable(runs)  # a patch release compares
    assert release("0.1.7") == release("0.1.0") == "0.1"
    board = leaderboard_provenance(runs)
    assert board.describe() == (
        f"provenance: canonical ({GENERATOR}, seed 20250314, 2 tasks, set 0123456789abcdef)"
        f" · srez 0.1.0, 0.1.7 · grade v2 · tasks digest {board.tasks_digest}"
    )
    assert board.as_json()["task_sets"] == [
        {
            "task_set": "canonical",
            "generator": GENERATOR,
            "seed": CANONICAL_SEED,
            "tasks": 2,
            "set_digest": "0123456789abcdef",
        }
    ]
    other = leaderboard_provenance([scored(), scored("sre-002", task_digest="00cc")])
    assert other.tasks_digest != board.tasks_digest  # another content, another digest


@pytest.mark.parametrize(
    ("second", "says"),
    [
        (scored(grade_version=1), "scored by different versions"),
        (scored(srez_version="0.2.0"), "scored by different versions"),
        (scored(task_digest="ffff"), "ran different contents of task sre-001"),
        (scored("sre-abcdef-001", task_set_digest="fedcba9876543210"), "different task sets"),
        (Scored("an old run", "sre-003", None), "has no provenance"),
    ],
)
def test_runs_that_do_not_compare_are_refused(second: Scored, says: str) -> None:
    with pytest.raises(IncompatibleResults, match=says) as refused:
        check_mergeable([scored(), second])
    assert "\n" not in str(refused.value) and "--results" in str(refused.value)


def test_a_run_that_recorded_no_set_digest_is_held_to_its_task_digests_only() -> None:
    old = scored("sre-002", task_set_digest=None)
    check_mergeable([scored(), old])  # written before set digests were recorded
    board = leaderboard_provenance([scored(), old])
    assert sorted(str(t.digest) for t in board.task_sets) == ["0123456789abcdef", "None"]
    with pytest.raises(IncompatibleResults, match="ran different contents of task sre-001"):
        check_mergeable([scored(), scored(task_set_digest=None, task_digest="ffff")])


def test_an_ungraded_run_is_not_held_to_a_grade_version() -> None:
    check_mergeable([scored(), scored("sre-002", grade_version=None, srez_version="9.0.0")])
    with pytest.raises(IncompatibleResults):
        check_mergeable([scored(), scored("sre-002", srez_version="9.0.0")])


def eval_(results: Path, *args: str) -> int:
    return main(["eval", "--agent", "heuristic", "--results", str(results), *args])


def test_eval_records_and_prints_its_provenance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert eval_(tmp_path, "--tasks", "sre-001,sre-002") == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("provenance:")]
    assert f"canonical ({GENERATOR}, seed 20250314, 2 tasks, set {packaged_set_digest()})" in line
    assert f"grade v{GRADE_SCHEMA_VERSION}" in line
    tasks = {t.id: t for t in load_tasks(["sre-001", "sre-002"])}
    for found in find_results(tmp_path):
        p = found.summary.provenance
        assert p is not None and p.task_set == "canonical"
        assert p.task_digest == task_digest(tasks[found.summary.task_id])
        assert p.task_set_digest == packaged_set_digest() == task_set_digest(load_tasks())
        assert p.grade_version == GRADE_SCHEMA_VERSION
    assert eval_(tmp_path, "--tasks", "sre-001,sre-002", "--resume", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["provenance"]["grade_version"] == GRADE_SCHEMA_VERSION
    assert data["provenance"]["task_sets"][0]["tasks"] == 2
    assert all(r["provenance"]["task_set"] == "canonical" for r in data["runs"])


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"grade_version": 1}, "scored by different versions"),
        ({"srez_version": "0.0.3"}, "scored by different versions"),
        ({"task_digest": "0123456789abcdef"}, "ran different contents of task sre-001"),
        (None, "has no provenance"),
    ],
)
def test_eval_resume_refuses_runs_of_another_version_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, object] | None, says: str
) -> None:
    assert eval_(tmp_path, "--tasks", "sre-001") == 0
    (old,) = find_results(tmp_path)
    path = old.path / "summary.json"
    summary = json.loads(path.read_text())
    summary["provenance"] = None if change is None else {**summary["provenance"], **change}
    path.write_text(json.dumps(summary))
    before = sorted(tmp_path.rglob("*"))
    capsys.readouterr()
    assert eval_(tmp_path, "--tasks", "sre-001,sre-002", "--resume") == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1, err
    assert sorted(tmp_path.rglob("*")) == before  # nothing ran, nothing was touched


def test_every_eval_leaderboard_shows_the_floors_it_was_not_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = "sre-001,sre-002,sre-040"  # sre-040: a no-fault control
    assert eval_(tmp_path / "a", "--tasks", tasks, "--seeds", "2", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    n = {a["agent"]: a["overall"]["n"] for a in data["agents"]}
    assert n == {"heuristic": 6, "noop": 6, "restart-all": 6}
    assert data["floors_played_here"] == ["noop", "restart-all"]
    assert {r["agent"] for r in data["runs"]} == {"heuristic"}
    assert {f.summary.agent for f in find_results(tmp_path / "a")} == {"heuristic"}  # not written
    floors = {a["agent"]: a["overall"] for a in data["agents"] if a["agent"] != "heuristic"}
    assert all(agg["passed_at_1"] == 0.0 for agg in floors.values())
    assert eval_(tmp_path / "b", "--tasks", tasks, "--no-floors") == 0
    out = capsys.readouterr().out
    assert "noop" not in out and "restart-all" not in out
    # a floor asked for is an agent like any other: run, written, and not played twice
    assert (
        main(["eval", "--agent", "noop", "--tasks", tasks, "--results", str(tmp_path / "c")]) == 0
    )
    out = capsys.readouterr().out
    assert "floors: restart-all played here" in out
    assert {f.summary.agent for f in find_results(tmp_path / "c")} == {"noop"}
    board = out[out.index("leaderboard") : out.index("provenance:")]
    assert board.count(" noop ") == 1 and board.count(" restart-all ") == 1
