"""Regrading a run its daemon died before grading (``srez regrade``): where its folder is.

A mirrored run is graded in its results folder; a stopped run of this state that its backend keeps
on this host (a ``local`` run whose daemon is gone) is graded in place, and its mirror then copies
the grade (:func:`srez_client.results.regrade.regrade_folder` grades either).
"""

from __future__ import annotations

import asyncio
import glob
from pathlib import Path

from srez_client.backends.base import Backend
from srez_client.errors import RunNotFoundError, UsageError
from srez_client.layout import RUN_ID_RE


async def regrade_target(backend: Backend, run: str, results: Path) -> Path:
    """The folder of ``run`` (an id or a prefix): a mirrored run under ``results``, else the
    folder of a stopped run of ``backend`` kept on this host (a local run's ``run/``, once
    nothing of it runs).

    Raises:
        RunNotFoundError: If ``run`` names no run, or several.
        UsageError: If ``run`` is not a run id or prefix, or the local run's daemon still runs
            (it grades the run itself).
    """
    if not run or not all(c.isalnum() or c == "-" for c in run):
        msg = f"RUN must be a run id or a prefix of one (YYYYMMDDTHHMMSSZ-<8 hex>), got {run!r}"
        raise UsageError(msg)
    mirrored = await asyncio.to_thread(_mirrored_folder, run, results)
    if mirrored is not None:
        return mirrored
    missing = f"no run {run!r} under {results} nor among this state's {backend.name} runs"
    try:
        handle = await backend.get(run)
    except RunNotFoundError as e:
        raise RunNotFoundError(missing) from e
    if handle.status == "running":
        msg = f"{backend.name} run {handle.run_id} is still running: its daemon grades it"
        raise UsageError(msg)
    folder = await backend.stopped_run_folder(handle)
    if folder is None:
        raise RunNotFoundError(missing)
    return folder


def _mirrored_folder(run: str, results: Path) -> Path | None:
    """The results folder of the run ``run`` names under ``results``, if it is mirrored.

    Raises:
        RunNotFoundError: If the prefix names several runs there.
    """
    found = sorted(
        p
        for p in results.glob(f"[!.]*/[!.]*/[!.]*/{glob.escape(run)}*")
        if RUN_ID_RE.match(p.name) and p.is_dir() and not p.is_symlink()
    )
    if len({p.name for p in found}) > 1:
        names = ", ".join(sorted({p.name for p in found}))
        msg = f"run prefix {run!r} matches several runs under {results}: {names}"
        raise RunNotFoundError(msg)
    return found[0] if found else None
