"""``srez mirror`` and ``srez regrade``: bring stopped runs into their results folders.

``srez mirror RUN`` mirrors one stopped run of a backend that keeps runs apart from their results
(:func:`~srez_client.lifecycle.recovery.mirror_stopped`); ``--backend`` picks one, else the run
is looked for in each such backend in registry order (a ``local`` run of this state first, then
a docker container). ``srez mirror --watch`` mirrors every run that has stopped, then each one as
it stops (``--once``: only those stopped now; ``--timeout S``: stop watching after S seconds), on
a backend that follows stops (:func:`~srez_client.lifecycle.recovery.watch_stopped`; docker's
containers). One line per run on stdout: ``<run-id>: mirrored to PATH``, ``skipped (...)``,
``refused: ...`` or ``failed: ...``.

``srez regrade RUN`` grades, from its transcript, a run whose daemon died before grading
(:mod:`srez_client.results.regrade`): a mirrored run under ``--results``, or a stopped run of this
state that the default backend keeps on this host (a ``local`` run whose daemon is gone: graded in
its live folder; its mirror then copies the grade).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from srez_client.backends.base import Backend
from srez_client.backends.config import BackendConfig, BackendSettings
from srez_client.backends.registry import (
    DEFAULT_BACKEND,
    backend_class,
    config_for,
    make_backend,
    names_where,
)
from srez_client.errors import RunNotFoundError, UsageError
from srez_client.lifecycle.recovery import (
    MirrorOutcome,
    WatchOptions,
    mirror_stopped,
    watch_stopped,
)
from srez_client.lifecycle.regrade import regrade_target
from srez_client.lifecycle.run import scratch_dir
from srez_client.sanitize import sanitize_line

EXIT_REFUSED = 2
"""``srez mirror RUN`` of a run that may not be mirrored here."""


def _print(outcome: MirrorOutcome) -> None:
    verb = {
        "mirrored": "mirrored to {}",
        "skipped": "skipped ({})",
        "refused": "refused: {}",
        "failed": "failed: {}",
    }[outcome.outcome]
    print(sanitize_line(f"{outcome.run_id}: {verb.format(outcome.detail)}"), flush=True)


def cmd_mirror(args: argparse.Namespace) -> int:
    """``srez mirror RUN`` or ``srez mirror --watch [--once] [--timeout S]``."""
    if args.watch == (args.run is not None):
        msg = "give either RUN or --watch"
        raise UsageError(msg)
    if not args.watch and (args.once or args.timeout is not None):
        msg = "--once and --timeout go with --watch"
        raise UsageError(msg)
    if args.timeout is not None and not args.timeout > 0:
        msg = f"--timeout must be a number > 0, got {args.timeout!r}"
        raise UsageError(msg)
    if args.watch:
        return _watch(args)
    # a backend that writes its results has nothing to mirror: RUN is looked for in the others
    names = [args.backend] if args.backend else names_where(lambda b: not b.writes_results)
    for name in names:
        config = _config(name)
        backend = make_backend(config)
        try:
            status = asyncio.run(_mirror_one(args, backend, config, last=name == names[-1]))
        finally:
            backend.close()
        if status is not None:
            return status
    msg = "no backend keeps runs apart from their results: there is nothing to mirror"
    raise UsageError(msg)


def _config(name: str) -> BackendConfig:
    return config_for(name, BackendSettings.from_env(os.environ))


def _exit_status(outcome: MirrorOutcome) -> int:
    return {"failed": 1, "refused": EXIT_REFUSED}.get(outcome.outcome, 0)


async def _mirror_one(
    args: argparse.Namespace, backend: Backend, config: BackendConfig, *, last: bool
) -> int | None:
    """Mirror RUN from ``backend``; None when it has no such run and is not the ``last`` one to
    ask (the next backend is asked)."""
    try:
        handle = await backend.get(args.run)
    except RunNotFoundError:
        if last:
            raise
        return None
    outcome = await mirror_stopped(
        backend, handle, scratch_dir(config.state_dir), results_root=args.results, remove=args.rm
    )
    _print(outcome)
    return _exit_status(outcome)


def _watch(args: argparse.Namespace) -> int:
    """``srez mirror --watch`` on ``--backend``, else on the first backend that follows stops."""
    followers = names_where(lambda b: b.follows_stops)
    name = args.backend or (followers[0] if followers else DEFAULT_BACKEND)
    if not backend_class(name).follows_stops:
        msg = f"--watch follows {' and '.join(followers) or 'no'} runs as they stop; 'srez runs list --backend {name}' mirrors stopped {name} runs"
        raise UsageError(msg)
    config = _config(name)
    backend = make_backend(config)

    async def go() -> int:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):  # end the watch cleanly, exit 0
            if task is not None:
                loop.add_signal_handler(sig, task.cancel)
        try:
            options = WatchOptions(
                results_root=args.results,
                once=args.once,
                timeout_s=args.timeout,
                remove=args.rm,
                report=_print,
            )
            outcomes = await watch_stopped(backend, scratch_dir(config.state_dir), options)
        except asyncio.CancelledError:
            sys.stderr.write("srez: mirror watch stopped\n")
            return 0
        return 1 if any(o.outcome == "failed" for o in outcomes) else 0

    try:
        return asyncio.run(go())
    finally:
        backend.close()


def cmd_regrade(args: argparse.Namespace) -> int:
    """``srez regrade RUN [--results DIR] [--tasks-dir DIR]``."""
    from srez_client.results.regrade import regrade_folder

    folder = _regrade_target(args.run, args.results)
    if (folder / "result.json").exists():
        print(sanitize_line(f"{folder.name}: already graded (result.json exists in {folder})"))
        return 0
    regraded = regrade_folder(folder, tasks_dir=args.tasks_dir)
    s = regraded.summary
    print(
        sanitize_line(
            f"{s.run_id}: graded by the host from its transcript ({regraded.steps_replayed} "
            f"steps replayed): reward {s.reward:.3f}, resolved {'yes' if s.resolved else 'no'}, "
            f"passed {'yes' if s.passed else 'no'}, end {s.end_reason}; in {folder}"
        )
    )
    return 0


def _regrade_target(run: str, results: Path) -> Path:
    """The folder of RUN: a mirrored run under ``results``, else the folder of a stopped run of
    the default backend kept on this host (:func:`~srez_client.lifecycle.regrade.regrade_target`)."""
    backend = make_backend(_config(DEFAULT_BACKEND))
    try:
        return asyncio.run(regrade_target(backend, run, results))
    finally:
        backend.close()
