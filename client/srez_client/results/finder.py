"""Finished runs found in a results folder (``srez runs results``).

A finished run is a folder ``<root>/<task>/<model>/<agent>/<run-id>/`` with a valid
``summary.json``. Folders are listed without following links, dot folders (partial mirrors) and
``managed/`` are skipped, and two folders with one run id show as one: the one finished last.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from srez_client.errors import AmbiguousRunError, RunNotFoundError, some_of
from srez_client.results.layout import RUN_ID_RE
from srez_client.runs import read_summary
from srez_daemon.protocol import RunSummary


@dataclass(frozen=True, slots=True)
class FoundRun:
    """A finished run in the results folder."""

    path: Path
    summary: RunSummary


def _subdirs(path: Path) -> list[Path]:
    try:
        with os.scandir(path) as listing:
            return sorted(
                Path(e.path)
                for e in listing
                if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
            )
    except OSError:
        return []


def find_results(root: Path) -> list[FoundRun]:
    """Every finished run under ``root``, oldest run id first."""
    found: dict[str, FoundRun] = {}
    for task in _subdirs(root):
        if task.name == "managed":
            continue
        for model in _subdirs(task):
            for agent in _subdirs(model):
                for run in _subdirs(agent):
                    if not RUN_ID_RE.match(run.name):
                        continue
                    summary = read_summary(run)
                    if summary is None:
                        continue
                    seen = found.get(run.name)
                    if seen is None or summary.finished_at > seen.summary.finished_at:
                        found[run.name] = FoundRun(run, summary)
    return [found[k] for k in sorted(found)]


def find_run(root: Path, ref: str) -> FoundRun:
    """The finished run under ``root`` whose id is ``ref`` or the only one starting with it.

    Raises:
        RunNotFoundError: If no finished run matches, or the prefix matches several (the message
            lists them).
    """
    found = find_results(root) if ref else []
    exact = [f for f in found if f.summary.run_id == ref]
    matches = exact or [f for f in found if f.summary.run_id.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        msg = f"no finished run {ref!r} under {root}; see 'srez runs results --results {root}'"
        raise RunNotFoundError(msg)
    ids = some_of([f.summary.run_id for f in matches])
    msg = f"run prefix {ref!r} matches {len(matches)} finished runs under {root} ({ids}); give more of the id"
    raise AmbiguousRunError(msg)


def results_rows(found: list[FoundRun]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the results table (cells are cleaned by ``render_table``)."""
    headers = ["run", "task", "model", "agent", "status", "reward", "steps", "passed", "folder"]
    rows = []
    for item in found:
        s = item.summary
        rows.append(
            [
                s.run_id,
                s.task_id,
                s.model,
                s.agent,
                s.status,
                "-" if s.reward is None else f"{s.reward:.3f}",
                "-" if s.steps is None else str(s.steps),
                {True: "yes", False: "no", None: "-"}[s.passed],
                str(item.path),
            ]
        )
    return headers, rows
