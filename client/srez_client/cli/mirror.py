"""``srez mirror`` and ``srez regrade``: bring stopped runs into their results folders.

``srez mirror RUN`` mirrors one run: a ``local`` run of this state (:mod:`srez_client.backends.local.recover`)
or a docker container (:mod:`srez_client.backends.docker.watch`); ``--backend`` picks one, else a local run
of that id is looked for first. ``srez mirror --watch`` mirrors every srez container that has
stopped, then each one as it stops (``--once``: only those stopped now; ``--timeout S``: stop
watching after S seconds). One line per run on stdout: ``<run-id>: mirrored to PATH``,
``skipped (...)``, ``refused: ...`` or ``failed: ...``.

``srez regrade RUN`` grades, from its transcript, a run whose daemon died before grading
(:mod:`srez_client.results.regrade`): a mirrored run under ``--results``, or a local run of this state
whose daemon is gone (graded in its live folder; its mirror then copies the grade).
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srez_client.backends.base import BackendSettings
from srez_client.errors import RunNotFoundError, UsageError
from srez_client.results.layout import RUN_ID_RE
from srez_client.runs import scratch_dir
from srez_client.sanitize import sanitize_line

if TYPE_CHECKING:
    from srez_client.backends.local.recover import MirrorOutcome

EXIT_REFUSED = 2
"""``srez mirror RUN`` of a run that may not be mirrored here."""


def add_mirror_command(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``mirror`` and ``regrade`` to the subcommands ``sub`` of ``srez``."""
    m = sub.add_parser("mirror", help="copy stopped local or docker runs into results folders")
    m.add_argument("run", nargs="?", metavar="RUN", help="the run to mirror (or --watch)")
    m.add_argument("--watch", action="store_true", help="mirror every srez container as it stops")
    m.add_argument("--once", action="store_true", help="with --watch: only those stopped now")
    m.add_argument("--timeout", type=float, metavar="S", help="with --watch: watch for S seconds")
    m.add_argument(
        "--results",
        type=Path,
        default=Path("results"),
        help="results root accepted for runs this state did not launch (default ./results)",
    )
    m.add_argument("--rm", action="store_true", help="remove our containers once mirrored")
    m.add_argument(
        "--backend",
        choices=("local", "docker"),
        help="where RUN is (default: a local run of this state if there is one, else docker)",
    )
    m.set_defaults(func=cmd_mirror)

    r = sub.add_parser("regrade", help="grade a run from its transcript when its daemon died")
    r.add_argument("run", metavar="RUN", help="run id or unique prefix")
    r.add_argument("--results", type=Path, default=Path("results"), help="results root")
    r.add_argument(
        "--tasks-dir",
        type=Path,
        metavar="DIR",
        help="read the run's task from the *.yaml files of DIR instead of the packaged ones",
    )
    r.set_defaults(func=cmd_regrade)


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
    if args.watch and args.backend == "local":
        msg = "--watch follows docker containers; 'srez runs list' mirrors stopped local runs"
        raise UsageError(msg)
    if not args.watch and args.backend != "docker":
        local = _mirror_local(args)
        if local is not None:
            return local
    from srez_client.backends.docker.backend import DockerBackend  # the SDK is imported only here
    from srez_client.backends.docker.watch import mirror_stopped, watch

    settings = BackendSettings.from_env(os.environ)
    backend = DockerBackend(
        settings.state_dir, image=settings.docker_image, extra_labels=dict(settings.docker_labels)
    )
    scratch = scratch_dir(settings.state_dir)

    async def go() -> int:
        try:
            if not args.watch:
                handle = await backend.get(args.run)
                outcome = await mirror_stopped(
                    backend, handle, scratch, results_root=args.results, remove=args.rm
                )
                _print(outcome)
                return {"failed": 1, "refused": EXIT_REFUSED}.get(outcome.outcome, 0)
            task = asyncio.current_task()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):  # end the watch cleanly, exit 0
                if task is not None:
                    loop.add_signal_handler(sig, task.cancel)
            try:
                outcomes = await watch(
                    backend,
                    scratch,
                    results_root=args.results,
                    once=args.once,
                    timeout_s=args.timeout,
                    remove=args.rm,
                    report=_print,
                )
            except asyncio.CancelledError:
                sys.stderr.write("srez: mirror watch stopped\n")
                return 0
            return 1 if any(o.outcome == "failed" for o in outcomes) else 0
        finally:
            backend.close()

    return asyncio.run(go())


def _mirror_local(args: argparse.Namespace) -> int | None:
    """Mirror RUN if it is a local run (None when there is no local run of that id and
    ``--backend`` was not given: the caller looks among docker containers)."""
    from srez_client.backends.local.backend import LocalBackend
    from srez_client.backends.local.recover import mirror_owned

    settings = BackendSettings.from_env(os.environ)
    backend = LocalBackend(settings.state_dir)

    async def go() -> int | None:
        try:
            handle = await backend.get(args.run)
        except RunNotFoundError:
            if args.backend == "local":
                raise
            return None
        outcome = await mirror_owned(backend, handle, scratch_dir(settings.state_dir))
        _print(outcome)
        return {"failed": 1, "refused": EXIT_REFUSED}.get(outcome.outcome, 0)

    return asyncio.run(go())


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
    """The folder of RUN: a mirrored run under ``results``, else a stopped local run's ``run/``.

    Raises:
        RunNotFoundError: If RUN names no run, or several.
        UsageError: If the local run's daemon still runs (it grades the run itself).
    """
    if not run or not all(c.isalnum() or c == "-" for c in run):
        msg = f"RUN must be a run id or a prefix of one (YYYYMMDDTHHMMSSZ-<8 hex>), got {run!r}"
        raise UsageError(msg)
    found = sorted(
        p
        for p in results.glob(f"[!.]*/[!.]*/[!.]*/{glob.escape(run)}*")
        if RUN_ID_RE.match(p.name) and p.is_dir() and not p.is_symlink()
    )
    if len({p.name for p in found}) > 1:
        names = ", ".join(sorted({p.name for p in found}))
        msg = f"run prefix {run!r} matches several runs under {results}: {names}"
        raise RunNotFoundError(msg)
    if found:
        return found[0]
    from srez_client.backends.local.backend import LocalBackend

    backend = LocalBackend(BackendSettings.from_env(os.environ).state_dir)

    async def local() -> Path:
        try:
            handle = await backend.get(run)
        except RunNotFoundError as e:
            msg = f"no run {run!r} under {results} nor among this state's local runs"
            raise RunNotFoundError(msg) from e
        if handle.status == "running":
            msg = f"local run {handle.run_id} is still running: its daemon grades it"
            raise UsageError(msg)
        await backend.stop(handle)  # ownership check, and kills an agent a dead daemon left
        return backend.live / handle.run_id / "run"

    return asyncio.run(local())
