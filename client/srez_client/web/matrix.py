"""The results folder as a whole: its leaderboard, and the task × agent matrix.

The leaderboard is :func:`srez_client.results.report.build_report` over every run's
``result.json`` (the figures ``srez eval`` prints, with their intervals and floors), rebuilt only
when the set of runs changed. The matrix has a cell per (task, agent) with the latest run's
reward and how many runs it has; a cell opens its run.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Final

import orjson

from srez_client.results.trust import problem
from srez_client.sanitize import sanitize_line
from srez_client.transfer.fs import read_small_file
from srez_client.web.catalog import RunRow
from srez_client.web.results_index import ResultsIndex

GRADE_MAX: Final = 4 << 20
NAMES: Final = ("task_id", "agent", "model", "difficulty", "fault_kind", "error_kind")
"""The fields of ``result.json`` the leaderboard shows as text."""


def agent_label(row: RunRow) -> str:
    """``agent`` or ``agent (model)``, as the leaderboard names them."""
    return row.agent if row.model in ("", "none") else f"{row.agent} ({row.model})"


def _grades(index: ResultsIndex) -> list[dict[str, Any]]:
    """Every run's ``result.json`` that parses; a damaged one (:mod:`.trust`) is kept out as
    an empty dict, which the report cannot read and counts as unreadable."""
    grades = []
    for row in index.rows():
        folder = index.path_of(row.run_id)
        data = read_small_file(folder, b"result.json", GRADE_MAX) if folder else None
        if data is None:
            continue
        try:
            grade = orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        if isinstance(grade, dict):
            grades.append({} if problem(grade) else _named_safely(grade))
    return grades


def _named_safely(grade: dict[str, Any]) -> dict[str, Any]:
    """``grade`` with the names the leaderboard shows made one safe line each."""
    return {
        k: sanitize_line(v) if k in NAMES and isinstance(v, str) else v for k, v in grade.items()
    }


class Leaderboard:
    """The report of every graded run of an index, rebuilt only when its runs changed."""

    def __init__(self, index: ResultsIndex) -> None:
        self.index = index
        self._lock = threading.Lock()
        self._key: tuple[str, ...] | None = None
        self._json: dict[str, Any] = {}

    def json(self) -> dict[str, Any]:
        """The report as the page reads it (``report`` None when no run was graded)."""
        from srez_client.results.report import build_report, report_json, views

        with self._lock:
            key = tuple(r.run_id + r.finished_at for r in self.index.rows())
            if key == self._key:
                return self._json
            grades, unreadable = [], 0
            for grade in _grades(self.index):
                try:
                    grades.extend(views([grade]))
                except ValueError:  # a result.json the report cannot read: counted, left out
                    unreadable += 1
            report = report_json(build_report(grades)) if grades else None
            self._key = key
            self._json = {"report": report, "runs": len(grades), "unreadable": unreadable}
            return self._json


def matrix_json(rows: Sequence[RunRow]) -> dict[str, Any]:
    """Tasks down, agents across; each cell the latest run of that pair and the pair's count."""
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for row in sorted(rows, key=lambda r: r.finished_at):
        key = (row.task_id, agent_label(row))
        count = cells[key]["runs"] + 1 if key in cells else 1
        cells[key] = {
            "run_id": row.run_id,
            "reward": row.reward,
            "resolved": row.resolved,
            "runs": count,
        }
    tasks = sorted({t for t, _ in cells})
    agents = sorted({a for _, a in cells})
    return {
        "tasks": tasks,
        "agents": agents,
        "cells": [[cells.get((t, a)) for a in agents] for t in tasks],
    }
