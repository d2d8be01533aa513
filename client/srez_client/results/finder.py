"""Finished runs found in a results folder (``srez runs results``, ``srez eval --resume``).

A finished run is a folder ``<root>/<task>/<model>/<agent>/<run-id>/`` with a valid
``summary.json``. Folders are listed without following links, dot folders (partial mirrors) and
``managed/`` are skipped, and two folders with one run id show as one: the one finished last.

A run is *complete* for ``srez eval --resume`` when it was graded and did not end on a provider
or harness failure (an agent's own failure is its result, so it counts); ``--resume`` keeps only
the complete runs of the task set it evaluates (:func:`complete_runs_by_set`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from srez_client.errors import AmbiguousRunError, RunNotFoundError, some_of
from srez_client.layout import RUN_ID_RE
from srez_client.transfer.fs import read_small_file, read_small_model
from srez_daemon.protocol import RunSummary
from srez_env.agents.failures import counted

STATUS_FILTERS: Final = ("ok", "error", "resolved", "unresolved")
"""What ``srez runs results --status`` accepts: the summary's status, or whether it resolved."""
RunKey = tuple[str, str, str, int]
"""(agent spec, model, task id, run seed): what ``srez eval --resume`` matches runs by."""


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


def run_folders(root: Path) -> Iterator[Path]:
    """Every ``<root>/<task>/<model>/<agent>/<run-id>/`` folder, listed without following links
    (not yet checked for a summary)."""
    for task in _subdirs(root):
        if task.name == "managed":
            continue
        for model in _subdirs(task):
            for agent in _subdirs(model):
                yield from (run for run in _subdirs(agent) if RUN_ID_RE.match(run.name))


def find_results(root: Path) -> list[FoundRun]:
    """Every finished run under ``root``, oldest run id first."""
    found: dict[str, FoundRun] = {}
    for run in run_folders(root):
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


def _matches(value: str, wanted: Collection[str]) -> bool:
    return not wanted or value in wanted


def filter_results(
    found: list[FoundRun],
    *,
    tasks: Collection[str] = (),
    agents: Collection[str] = (),
    models: Collection[str] = (),
    status: str | None = None,
) -> list[FoundRun]:
    """The runs whose task, agent and model are among those given (empty: any) and whose
    status is ``status`` (one of :data:`STATUS_FILTERS`; None: any)."""
    if status is not None and status not in STATUS_FILTERS:
        msg = f"unknown status {status!r} (one of {', '.join(STATUS_FILTERS)})"
        raise ValueError(msg)

    def status_ok(s: RunSummary) -> bool:
        if status in ("ok", "error"):
            return s.status == status
        if status == "resolved":
            return s.resolved is True
        if status == "unresolved":
            return s.resolved is not True
        return True

    return [
        f
        for f in found
        if _matches(f.summary.task_id, tasks)
        and _matches(f.summary.agent, agents)
        and _matches(f.summary.model, models)
        and status_ok(f.summary)
    ]


def results_json(found: list[FoundRun]) -> list[dict[str, object]]:
    """The JSON form of the runs (``srez runs results --json``): each summary and its folder."""
    return [{**f.summary.model_dump(mode="json"), "folder": str(f.path)} for f in found]


def is_complete(summary: RunSummary) -> bool:
    """Whether a run counts as done for ``srez eval --resume`` (see the module docstring)."""
    return summary.reward is not None and counted(summary.error_kind)


def run_key(item: FoundRun) -> RunKey | None:
    """The (agent spec, model, task, seed) of a run, from its ``run.json``; None if unreadable."""
    data = read_small_file(item.path, b"run.json", 1 << 20)
    try:
        manifest = orjson.loads(data) if data is not None else None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(manifest, dict):
        return None
    spec, seed = manifest.get("agent_spec"), manifest.get("run_seed")
    if not isinstance(spec, str) or not isinstance(seed, int):
        return None
    return spec, item.summary.model, item.summary.task_id, seed


def complete_runs(root: Path) -> dict[RunKey, FoundRun]:
    """The complete runs under ``root`` by (agent spec, model, task, seed); the latest of each."""
    out: dict[RunKey, FoundRun] = {}
    for item in find_results(root):  # oldest first: a later run of one key replaces it
        key = run_key(item) if is_complete(item.summary) else None
        if key is not None:
            out[key] = item
    return out


def complete_runs_by_set(root: Path) -> dict[str | None, dict[RunKey, FoundRun]]:
    """The complete runs under ``root`` by the digest of the task set they ran on (None: not
    recorded), then by (agent spec, model, task, seed); the latest of each."""
    out: dict[str | None, dict[RunKey, FoundRun]] = {}
    for item in find_results(root):  # oldest first: a later run of one key replaces it
        if not is_complete(item.summary):
            continue
        key = run_key(item)
        if key is not None:
            p = item.summary.provenance
            out.setdefault(p.task_set_digest if p is not None else None, {})[key] = item
    return out


def read_summary(results_dir: Path) -> RunSummary | None:
    """``summary.json`` of a results folder, or None."""
    return read_small_model(results_dir, b"summary.json", RunSummary, 1 << 20)
