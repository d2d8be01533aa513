"""``srez export atif RUN|--all``: write a run's dialog as ``archive/trajectory.json`` (ATIF v1.8).

``RUN`` is a run folder (holding ``archive/dialog.jsonl``), or the id (or a unique prefix of it) of
a finished run under ``--results``; ``--all`` exports every finished run there. The dialog is read
with the tolerant parser, so a torn or damaged file still exports what can be read (the mapping,
and how the step counts agree with ``summary.json``: :mod:`srez_client.results.atif`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import orjson

from srez_client.errors import UsageError
from srez_client.results.atif import to_atif
from srez_client.results.finder import find_results, find_run
from srez_core.atomic import atomic_write_bytes
from srez_daemon.protocol.dialog import iter_dialog

TRAJECTORY: str = "trajectory.json"


def cmd_export_atif(args: argparse.Namespace) -> int:
    """Export the runs named by ``args``; prints one path per trajectory written."""
    if bool(args.run) == bool(args.all):
        msg = "export atif needs a RUN (folder or run id) or --all, not both"
        raise UsageError(msg)
    runs = [found.path for found in find_results(args.results)] if args.all else [_run(args)]
    for run in runs:
        print(export_atif(run))
    return 0


def export_atif(run_dir: Path) -> Path:
    """Writes ``archive/trajectory.json`` of one run folder; returns its path."""
    dialog = run_dir / "archive" / "dialog.jsonl"
    try:
        data = dialog.read_bytes()
    except OSError as e:
        msg = f"{run_dir}: no readable archive/dialog.jsonl ({e.strerror})"
        raise UsageError(msg) from e
    trajectory = to_atif(
        iter_dialog(data, final=True),
        run=_json(run_dir / "run.json"),
        summary=_json(run_dir / "summary.json") or None,
    )
    out = dialog.with_name(TRAJECTORY)
    atomic_write_bytes(out, orjson.dumps(trajectory, option=orjson.OPT_INDENT_2) + b"\n")
    return out


def _run(args: argparse.Namespace) -> Path:
    """The folder RUN names: a run folder, else a finished run's id or unique prefix."""
    given = Path(args.run)
    if (given / "archive" / "dialog.jsonl").is_file():
        return given
    if "/" in args.run or not all(c.isalnum() or c == "-" for c in args.run):
        msg = f"no run {args.run!r}: not a run folder (no archive/dialog.jsonl), nor a run id"
        raise UsageError(msg)
    return find_run(args.results, args.run).path


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
