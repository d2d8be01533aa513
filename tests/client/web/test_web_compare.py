"""Two runs side by side: figures per run, checks paired by name, files paired by path."""

from __future__ import annotations

from typing import Any

from srez_client.web.compare import compare_json


def _view(run_id: str, task: str, checks: list[tuple[str, str]], cards: list[Any]) -> Any:
    meta = {
        "run_id": run_id,
        "task_id": task,
        "difficulty": "easy",
        "agent": run_id,
        "model": "m",
        "backend": "local",
    }
    evaluation = {
        "graded": bool(checks), "reward": 0.5 if checks else None, "resolved": None, "passed": None,
        "steps": 3, "max_steps": 10, "duration_s": 1.0, "end_reason": "submit", "error": "",
        "checks": [{"name": n, "state": s, "reasons": [f"{n} {s}"]} for n, s in checks],
    }  # fmt: skip
    totals = {"files": len(cards), "added": 1, "removed": 0}
    return {
        "meta": meta,
        "evaluation": evaluation,
        "changes": {"agent": {"cards": cards, "totals": totals}, "similarity": None},
        "dialog": {
            "items": [{"kind": "tool"}, {"kind": "assistant"}],
            "tool_calls": 1,
            "usage": None,
        },
    }


def _card(path: str, status: str = "M") -> dict[str, Any]:
    return {"path": path, "status": status, "added": 1, "removed": 0}


def test_a_graded_run_beside_an_ungraded_one() -> None:
    a = _view("a", "sre-001", [("valid", "pass"), ("func", "fail")], [_card("x.conf")])
    b = _view("b", "sre-002", [], [_card("y.conf", "A"), _card("x.conf")])
    out = compare_json(a, b)
    assert out["same_task"] is False
    assert [r["run_id"] for r in out["runs"]] == ["a", "b"]
    assert out["runs"][0]["tool_calls"] == 1 and out["runs"][1]["reward"] is None
    assert out["runs"][0]["similarity"] is None
    assert out["checks"] == [
        {"name": "valid", "states": ["pass", "na"], "reasons": [["valid pass"], []]},
        {"name": "func", "states": ["fail", "na"], "reasons": [["func fail"], []]},
    ]
    assert out["files"] == [
        {"path": "x.conf", "sides": ["M +1 -0", "M +1 -0"]},
        {"path": "y.conf", "sides": [None, "A +1 -0"]},
    ]
