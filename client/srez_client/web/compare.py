"""Two runs side by side (``GET /api/compare?a=ID&b=ID``): two agents on one task, most often.

Pure: built from two runs' views (:meth:`srez_client.web.views.RunView.snapshot`), which hold
only sanitised text. Each run gives its figures (reward, resolved, passed, steps, time, tokens,
tool calls, the size of its diff and its similarity to the reference); the five checks are paired
by name, and the files either diff touched are paired by path, so a difference between the two
runs is one row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _figures(view: Mapping[str, Any]) -> dict[str, Any]:
    meta, ev, changes = view["meta"], view["evaluation"], view["changes"]
    similarity = changes.get("similarity") or {}
    return {
        "run_id": meta["run_id"],
        "task_id": meta["task_id"],
        "difficulty": meta["difficulty"],
        "agent": meta["agent"],
        "model": meta["model"],
        "backend": meta["backend"],
        "graded": ev["graded"],
        "reward": ev["reward"],
        "resolved": ev["resolved"],
        "passed": ev["passed"],
        "steps": ev["steps"],
        "max_steps": ev["max_steps"],
        "duration_s": ev["duration_s"],
        "end_reason": ev["end_reason"],
        "error": ev["error"],
        "tool_calls": view["dialog"]["tool_calls"],
        "usage": view["dialog"].get("usage"),
        "diff": changes["agent"]["totals"],
        "similarity": similarity.get("text"),
        "similarity_colour": similarity.get("colour"),
    }


def _checks(views: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    by_run = [{c["name"]: c for c in v["evaluation"]["checks"]} for v in views]
    names = list(dict.fromkeys(name for checks in by_run for name in checks))
    return [
        {
            "name": name,
            "states": [checks[name]["state"] if name in checks else "na" for checks in by_run],
            "reasons": [checks[name]["reasons"] if name in checks else [] for checks in by_run],
        }
        for name in names
    ]


def _files(views: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    by_run = [{c["path"]: c for c in v["changes"]["agent"]["cards"]} for v in views]
    paths = sorted({path for cards in by_run for path in cards})
    return [
        {
            "path": path,
            "sides": [
                f"{c['status']} +{c['added']} -{c['removed']}" if (c := cards.get(path)) else None
                for cards in by_run
            ],
        }
        for path in paths
    ]


def compare_json(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """Runs ``a`` and ``b`` (their views) side by side, as the compare page reads them."""
    views = (a, b)
    runs = [_figures(v) for v in views]
    return {
        "same_task": runs[0]["task_id"] == runs[1]["task_id"],
        "runs": runs,
        "checks": _checks(views),
        "files": _files(views),
    }
