"""The finished runs of a results folder, kept as list rows and refreshed incrementally.

A folder of 10,000 runs is read once (each ``summary.json`` parsed with orjson, no models); a
refresh lists the folders again and re-reads only the summaries whose size or modification time
changed, so the list stays current without a request ever waiting for a scan. Folders are listed
without following links, dot folders (partial mirrors) and ``managed/`` are skipped, files are
opened as regular files only, and two folders with one run id show as one (the one finished last),
as :mod:`srez_client.results.finder` does.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Final

import orjson

from srez_client.results.finder import run_folders
from srez_client.results.trust import problem
from srez_client.sanitize import sanitize_line
from srez_client.transfer.fs import reached_without_links, read_small_file
from srez_client.web.catalog import RunRow

SUMMARY_MAX: Final = 1 << 20
"""Largest ``summary.json`` read."""


def _text(data: dict[str, Any], key: str) -> str:
    """A one-line field as the list, its filters and the matrix show it: with every control
    and bidi override a visible escape (a planted ``summary.json`` is free to hold any)."""
    value = data.get(key)
    return sanitize_line(value) if isinstance(value, str) else ""


def _number(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def row_of(folder: Path) -> RunRow | None:
    """The list row of a run folder from its ``summary.json``; None when it has no valid one."""
    raw = read_small_file(folder, b"summary.json", SUMMARY_MAX)
    if raw is None:
        return None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict) or _text(data, "run_id") != folder.name:
        return None
    if problem(data):  # a planted or broken file: listed, with none of its numbers
        data = {k: v for k, v in data.items() if isinstance(v, str)} | {"status": "damaged"}
    resolved = data.get("resolved")
    steps = _number(data, "steps")
    return RunRow(
        run_id=folder.name,
        task_id=_text(data, "task_id"),
        model=_text(data, "model"),
        agent=_text(data, "agent"),
        state="finished",
        status=_text(data, "status"),
        resolved=resolved if isinstance(resolved, bool) else None,
        reward=_number(data, "reward"),
        steps=None if steps is None else int(steps),
        finished_at=_text(data, "finished_at"),
    )


class ResultsIndex:
    """The finished runs under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._seen: dict[Path, tuple[tuple[int, int], RunRow | None]] = {}
        self._rows: list[RunRow] = []
        self._paths: dict[str, Path] = {}

    def refresh(self) -> None:
        """Lists the folders again; reads only the summaries that are new or changed."""
        seen: dict[Path, tuple[tuple[int, int], RunRow | None]] = {}
        best: dict[str, tuple[RunRow, Path]] = {}
        for folder in run_folders(self.root):
            try:
                st = os.lstat(folder / "summary.json")
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            key = (st.st_mtime_ns, st.st_size)
            cached = self._seen.get(folder)
            row = cached[1] if cached is not None and cached[0] == key else row_of(folder)
            seen[folder] = (key, row)
            if row is None:
                continue
            other = best.get(row.run_id)
            if other is None or row.finished_at > other[0].finished_at:
                best[row.run_id] = (row, folder)
        self._seen = seen
        self._rows = [best[k][0] for k in sorted(best)]
        self._paths = {k: v[1] for k, v in best.items()}

    def rows(self) -> list[RunRow]:
        """The rows as of the last refresh, by run id."""
        return self._rows

    def path_of(self, run_id: str) -> Path | None:
        """The folder of a finished run, or None: also when the folder, or one above it, was
        swapped for a link since the listing (it is then read through no link at all)."""
        folder = self._paths.get(run_id)
        if folder is None or not reached_without_links(self.root, folder):
            return None
        return folder
