"""``srez managed ...`` end to end on the inline backend, in process, and its one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from managed_kit import baseline_queue

from srez_client.cli import main
from srez_client.managed import api


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SREZ_STATE", str(tmp_path / "state"))
    monkeypatch.delenv("SREZ_TODAY", raising=False)
    monkeypatch.delenv("SREZ_MODELS_FILE", raising=False)
    return tmp_path / "results"


def srez(root: Path, *args: str) -> int:
    return main(["managed", *args, "--results", str(root)])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["create", "../x"], "managed run name '../x' is not valid"),
        (["create", "ok", "--backend", "moon"], "invalid choice"),
        (["create", "ok", "--tasks", "sre-999"], "sre-999"),
        (["create", "ok", "--models", "gpt4"], "not a model slug"),
        (["create", "ok", "--baselines", "oracle"], "unknown agent 'oracle'"),
        (["create", "ok", "--daily-budget-usd", "-1"], "must be an amount in USD >= 0"),
        (["create", "ok", "--cost-cap-usd", "0"], "must be > 0"),
        (["create", "ok", "--daily-budget-usd", "5"], "needs --cost-cap-usd"),
        (["create", "ok", "--baselines", "none", "--models", "none"], "at least one target"),
        (["status", "missing"], "no managed run 'missing'"),
        (["run", "missing"], "no managed run 'missing'"),
    ],
)
def test_managed_cli_bad_input_is_one_line_exit_2(
    root: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    assert srez(root, *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("srez: error: ")
    assert err.count("\n") == 1, err
    assert needle in err


def test_managed_cli_lifecycle_inline(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        srez(
            root,
            "create",
            "m",
            "--baselines",
            "scripted,random",
            "--models",
            "none",
            "--tasks",
            "sre-001,sre-004",
            "--backend",
            "inline",
        )
        == 0
    )
    assert srez(root, "create", "m", "--baselines", "scripted", "--models", "none") == 2
    assert srez(root, "add-target", "m", "heuristic") == 0
    assert srez(root, "remove-target", "m", "random") == 0
    assert srez(root, "remove-target", "m", "random") == 2
    assert srez(root, "export-queue", "m") == 0
    sh = (root / "managed" / "m" / "command.sh").read_text()
    assert "--target scripted" in sh and "--target heuristic" in sh
    capsys.readouterr()
    assert srez(root, "run", "m", "--target", "heuristic") == 0
    assert srez(root, "run", "m", "--target", "nope") == 2
    assert capsys.readouterr().out.splitlines()[2].split()[:3] == ["heuristic", "baseline", "2/2"]
    assert srez(root, "status", "m", "--json") == 0
    status = json.loads(capsys.readouterr().out)
    states = {t["target"]: t["state"] for t in status["targets"]}
    assert states == {"scripted": "pending", "heuristic": "done"}
    heuristic = next(t for t in status["targets"] if t["target"] == "heuristic")
    lo, hi = heuristic["reward_ci"]
    assert lo <= heuristic["mean_reward"] <= hi
    assert srez(root, "export-queue", "m") == 0
    sh = (root / "managed" / "m" / "command.sh").read_text()
    assert "--target scripted" in sh and "--target heuristic" not in sh
    assert srez(root, "run", "m") == 0
    assert srez(root, "summarize", "m") == 0
    folder = root / "managed" / "m"
    assert (folder / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        "| scripted | baseline | 2/2 | 1.000 [1.00, 1.00] |" in (folder / "summary.md").read_text()
    )
    combined = json.loads((folder / "summary.json").read_text())
    scripted = next(t for t in combined["targets"] if t["target"] == "scripted")
    assert (scripted["reward_ci"], scripted["resolved_ci"]) == ([1.0, 1.0], [1.0, 1.0])
    capsys.readouterr()
    assert srez(root, "status", "m") == 0
    assert "1.000 [1.00, 1.00]" in capsys.readouterr().out
    assert (folder / "targets" / "scripted" / "console.log").read_text().count("completed") == 2
    capsys.readouterr()
    assert srez(root, "list") == 0
    assert capsys.readouterr().out.split() == ["m"]
    before = sorted(p for p in root.glob("sre-*/none/*/*"))
    assert srez(root, "delete-target-artifacts", "m", "heuristic", "--yes") == 0
    after = sorted(p for p in root.glob("sre-*/none/*/*"))
    assert len(before) - len(after) == 2
    assert all("/heuristic/" not in str(p) for p in after)
    assert api.status(root, "m").targets[1].state == "pending"


def test_managed_cli_pause_blocks_run(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        srez(
            root,
            *baseline_queue("p", "sre-001", "inline"),
        )
        == 0
    )
    assert srez(root, "pause", "p") == 0
    assert srez(root, "run", "p") == 75
    assert not (root / "managed" / "p" / "targets" / "scripted" / "output.json").exists()
    assert srez(root, "clear-pause", "p") == 0
    assert srez(root, "run", "p") == 0
    assert srez(root, "stop", "p") == 0
    assert "no runner was running" in capsys.readouterr().out
