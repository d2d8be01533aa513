"""``make model-card`` (bench/model_card.py): the first real model's ledger grows a task at a
time, never mixes grades of other settings, never loses a ledger, and the card quotes what it
holds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench import card, model_card

from srez_env.agents import make_agent
from srez_env.grade import grade_episode
from srez_env.play import play_episode
from srez_env.tasks import load_tasks

ROOT = Path(__file__).resolve().parent.parent
IDENTITY = {"model": "m", "agent": "llm-json", "grade_version": 3}


def grades_of(task_ids: list[str]) -> list[dict[str, object]]:
    """Real grades (the scripted expert's) to stand in the ledger for the model's."""
    out = []
    for task in load_tasks(task_ids):
        env = play_episode(task, make_agent("scripted", task, 0), name="llm-json")
        out.append(grade_episode(env.record()).model_dump(mode="json", by_alias=True))
    return out


def test_a_missing_ledger_starts_empty_and_one_of_other_settings_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    assert model_card.read_ledger(path, IDENTITY) == {**IDENTITY, "runs": []}
    model_card.write_ledger(path, {**IDENTITY, "grade_version": 2, "model": "x", "runs": []})
    with pytest.raises(model_card.LedgerError, match=r"another grade_version, model: .*--restart"):
        model_card.read_ledger(path, IDENTITY)
    path.write_text("{not json")
    with pytest.raises(model_card.LedgerError, match="does not read"):
        model_card.read_ledger(path, IDENTITY)
    model_card.write_ledger(path, {**IDENTITY, "runs": [{"task_id": "sre-001", "wall_s": 1}]})
    with pytest.raises(model_card.LedgerError, match="name no task digest; run with --restart"):
        model_card.read_ledger(path, IDENTITY)


def test_a_grade_of_a_task_changed_since_is_set_aside_and_kept() -> None:
    digests = {"sre-001": "a1", "sre-002": "b2"}
    runs = [
        {"task_id": "sre-001", "task_digest": "a1"},
        {"task_id": "sre-002", "task_digest": "old"},
        {"task_id": "sre-999", "task_digest": "gone"},
    ]
    ledger = {**IDENTITY, "runs": list(runs), "stale": [{"task_id": "sre-003", "task_digest": "x"}]}
    assert model_card.set_aside_stale(ledger, digests) == runs[1:]
    assert ledger["runs"] == runs[:1]
    assert ledger["stale"] == [{"task_id": "sre-003", "task_digest": "x"}, *runs[1:]]
    assert model_card.remaining(ledger, list(digests)) == ["sre-002"]
    assert model_card.set_aside_stale(ledger, digests) == []  # nothing moves twice


def test_the_tasks_left_are_those_without_a_grade_in_the_set_order() -> None:
    ledger = {"runs": [{"task_id": "sre-002"}, {"task_id": "sre-001"}]}
    assert model_card.remaining(ledger, ["sre-001", "sre-002", "sre-003", "sre-004"]) == [
        "sre-003",
        "sre-004",
    ]


def run_main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench.model_card", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_ledger_of_other_settings_stops_the_command_and_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    run = {"task_id": "sre-001", "task_digest": "d", "wall_s": 1}
    path.write_text(json.dumps({**IDENTITY, "runs": [run]}))
    before = path.read_bytes()
    done = run_main("--ledger", str(path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--restart" in done.stderr, done.stderr
    assert path.read_bytes() == before
    bad = run_main("--minutes", "0")
    assert bad.returncode == 2 and "--minutes must be above 0, got 0.0" in bad.stderr


def timed_run(task_id: str, digest: str | None = None) -> dict[str, object]:
    """A ledger entry of ``task_id`` (its task as it is today unless ``digest`` says otherwise)
    that took ten minutes: longer than a one-minute sitting has."""
    digest = digest or model_card.task_digests()[task_id]
    return {"task_id": task_id, "task_digest": digest, "wall_s": 600.0}


def short_sitting(path: Path, runs: list[dict[str, object]]) -> subprocess.CompletedProcess[str]:
    """A one-minute sitting on a ledger of today's settings holding ``runs``."""
    model_card.write_ledger(path, {**model_card.identity(), "runs": runs})
    done = run_main("--ledger", str(path), "--minutes", "1")
    assert done.returncode == 0, done.stderr
    return done


def test_no_task_starts_when_the_sitting_has_less_time_than_the_slowest_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.json"
    done = short_sitting(path, [timed_run("sre-001")])
    assert done.stdout.strip() == f"model-card: 1 of 40 tasks in {path}"
    assert json.loads(path.read_text()) == {**model_card.identity(), "runs": [timed_run("sre-001")]}


def test_the_command_sets_aside_the_grade_of_a_changed_task_and_plays_it_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.json"
    current, changed = timed_run("sre-001"), timed_run("sre-002", "0" * 16)
    done = short_sitting(path, [current, changed])
    assert "changed since they were played, kept under 'stale': sre-002; playing" in done.stderr
    assert done.stdout.strip() == f"model-card: 1 of 40 tasks in {path}"
    kept = json.loads(path.read_text())
    assert (kept["runs"], kept["stale"]) == ([current], [changed])


def test_restart_moves_the_old_ledger_aside(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    model_card.write_ledger(path, {**IDENTITY, "runs": []})
    done = run_main("--ledger", str(path), "--restart", "--minutes", "1")
    assert done.returncode == 0, done.stderr
    (aside,) = tmp_path.glob("ledger.*.json")
    assert json.loads(aside.read_text())["model"] == "m"
    assert done.stdout.strip() == f"model-card: 0 of 40 tasks in {path}"  # none timed: 10 min
    assert not path.exists()  # a ledger is written when its first grade lands


def test_the_card_quotes_the_ledger_with_how_much_of_the_set_it_covers(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    assert card._model_line(path, 40).startswith("Not measured yet")
    digests = model_card.task_digests()
    runs = [
        {"task_id": g["task_id"], "task_digest": digests[g["task_id"]], "wall_s": wall, "grade": g}
        for g, wall in zip(grades_of(["sre-001", "sre-039"]), (700.0, 500.0), strict=True)
    ]
    [changed] = grades_of(["sre-002"])
    runs.append({"task_id": "sre-002", "task_digest": "old", "wall_s": 900.0, "grade": changed})
    model_card.write_ledger(path, {**model_card.identity(), "runs": runs})
    line = card._model_line(path, 40)
    assert "measured on 2 of the 40 canonical tasks so far (sre-001, sre-039)" in line
    assert "a median of 700 s a task" in line
    assert "llm-json" in line and " 2  1.000 [1.00, 1.00]" in line, line
