"""``srez eval --resume --limit``, the table ``srez eval`` ends with, an interrupted ``eval``,
``srez runs results`` filters and ``--json``, and ``srez runs prune``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from srez_client.backends import run_inline
from srez_client.cli import evaluate, main
from srez_client.results.finder import find_results

SREZ = Path(sys.executable).parent / "srez"


def eval_(results: Path, *args: str) -> int:
    return main(["eval", "--agent", "scripted,random", "--results", str(results), *args])


def folders(results: Path) -> set[Path]:
    return {f.path for f in find_results(results)}


def test_eval_resume_skips_complete_runs_and_limit_caps_the_new_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    assert eval_(results, "--tasks", "sre-001", "--limit", "1") == 0
    out = capsys.readouterr().out
    assert len(folders(results)) == 1
    assert "1 runs written" in out and "1 left by --limit" in out
    first = folders(results)
    assert eval_(results, "--tasks", "sre-001,sre-002", "--resume", "--limit", "2") == 0
    out, err = capsys.readouterr()
    assert "1 of 4 runs already complete" in err
    assert len(folders(results)) == 3 and first < folders(results)
    assert "2 runs written" in out and "1 complete ones kept (--resume)" in out
    assert eval_(results, "--tasks", "sre-001,sre-002", "--resume", "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert len(folders(results)) == 4
    assert sum(bool(r.get("resumed")) for r in data["runs"]) == 3
    n = {a["agent"]: a["overall"]["n"] for a in data["agents"]}
    assert n == {"random": 2, "scripted": 2, "noop": 2, "restart-all": 2}
    assert eval_(results, "--tasks", "sre-001,sre-002", "--resume") == 0
    assert len(folders(results)) == 4  # nothing left to run
    out = capsys.readouterr().out
    assert "0 runs written" in out and "4 complete ones kept" in out
    # a run that did not end complete is run again
    (broken,) = [f for f in find_results(results) if f.summary.task_id == "sre-002"][-1:]
    summary = json.loads((broken.path / "summary.json").read_text())
    summary.update(status="error", error="boom", error_kind="harness")
    (broken.path / "summary.json").write_text(json.dumps(summary))
    assert eval_(results, "--tasks", "sre-001,sre-002", "--resume") == 0
    assert len(folders(results)) == 5
    capsys.readouterr()


def test_floors_play_the_pairs_of_the_runs_limit_and_resume_leave(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def counts(*args: str) -> dict[str, int]:
        argv = ["eval", "--agent", "scripted", "--tasks", "sre-001,sre-002,sre-003"]
        assert main([*argv, "--results", str(tmp_path), "--json", *args]) == 0
        data = json.loads(capsys.readouterr().out)
        return {a["agent"]: a["overall"]["n"] for a in data["agents"]}

    assert counts("--limit", "1") == {"scripted": 1, "noop": 1, "restart-all": 1}
    assert counts("--resume", "--limit", "1") == {"scripted": 2, "noop": 2, "restart-all": 2}
    assert counts("--seeds", "2", "--resume") == {"scripted": 6, "noop": 6, "restart-all": 6}


def test_eval_ends_with_a_table_of_what_it_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert eval_(tmp_path, "--tasks", "sre-001,sre-002", "--detail") == 0
    tail = capsys.readouterr().out.splitlines()[-4:]
    assert tail[0].split() == ["agent", "runs", "resolved", "mean", "reward", "errors"]
    assert tail[2].split() == ["random", "2", "0", "0.000", "0"]
    assert tail[3].split() == ["scripted", "2", "2", "1.000", "0"]


def test_interrupted_eval_reports_what_finished_and_how_to_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def interrupted_second(*args: object, **kwargs: object) -> object:
        calls.append("run")
        if len(calls) == 2:
            raise KeyboardInterrupt
        return run_inline(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluate, "run_inline", interrupted_second)
    assert eval_(tmp_path, "--tasks", "sre-001") == 130
    out, err = capsys.readouterr()
    assert err.splitlines()[-1] == (
        f"srez: interrupted after 1 of 2 runs; the runs that ended are under {tmp_path};"
        " the same command with --resume runs the rest"
    )
    assert "srez: error" not in err
    assert out.splitlines()[3].split()[:4] == ["1", "scripted", "-", "1"]  # the run that ended
    assert out.splitlines()[-1].startswith(f"1 runs written under {tmp_path}")
    monkeypatch.undo()
    assert eval_(tmp_path, "--tasks", "sre-001", "--resume") == 0
    assert len(folders(tmp_path)) == 2


def test_runs_results_filters_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_(tmp_path, "--tasks", "sre-001,sre-002") == 0
    capsys.readouterr()

    def results(*args: str) -> str:
        assert main(["runs", "results", "--results", str(tmp_path), *args]) == 0
        return capsys.readouterr().out

    assert len(results().splitlines()) == 2 + 4
    rows = json.loads(results("--json"))
    assert len(rows) == 4 and {"run_id", "task_id", "agent", "folder"} <= set(rows[0])
    only = json.loads(results("--json", "--agent", "random", "--task", "sre-002"))
    assert [(r["agent"], r["task_id"]) for r in only] == [("random", "sre-002")]
    resolved = json.loads(results("--json", "--status", "resolved"))
    assert {r["agent"] for r in resolved} == {"scripted"} and len(resolved) == 2
    assert len(json.loads(results("--json", "--status", "unresolved"))) == 2
    assert len(json.loads(results("--json", "--status", "ok", "--model", "none"))) == 4
    assert json.loads(results("--json", "--model", "openai/gpt-5")) == []
    assert "match those filters" in results("--agent", "nobody")
    assert main(["runs", "results", "--results", str(tmp_path), "--status", "good"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice: 'good'" in err and "resolved" in err
    assert main(["runs", "results", "--results", str(tmp_path), "--task", "sre-001,,x"]) == 2
    assert "empty name" in capsys.readouterr().err


def srez(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SREZ_STATE": str(state)}
    return subprocess.run(
        [str(SREZ), *args], capture_output=True, text=True, env=env, check=False, timeout=120
    )


def test_runs_prune_lists_then_removes_exited_mirrored_runs_only(tmp_path: Path) -> None:
    state, results = tmp_path / "state", tmp_path / "results"
    ran = srez(
        state, "run", "--task", "sre-001", "--agent", "scripted", "--keep",
        "--results", str(results),
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    run_id = srez(state, "runs", "list").stdout.splitlines()[2].split()[0]
    dry = srez(state, "runs", "prune")
    assert dry.returncode == 0 and "nothing to prune" in dry.stdout  # still running: left alone
    assert srez(state, "runs", "stop", run_id).returncode == 0
    dry = srez(state, "runs", "prune")
    assert f"{run_id}: would be removed" in dry.stdout and "--yes" in dry.stdout
    assert run_id in srez(state, "runs", "list", "--all").stdout  # a dry run removes nothing
    done = srez(state, "runs", "prune", "--yes")
    assert done.returncode == 0 and f"{run_id}: removed" in done.stdout
    assert srez(state, "runs", "list", "--all").stdout.strip() == "no runs"
    assert (results / "sre-001" / "none" / "scripted" / run_id / "summary.json").is_file()
