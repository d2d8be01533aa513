"""``srez mirror``: copy stopped ``docker`` runs into their results folders.

``srez mirror RUN`` mirrors one run; ``srez mirror --watch`` mirrors every srez container that
has stopped, then each one as it stops (``--once``: only those stopped now; ``--timeout S``: stop
watching after S seconds). One line per run on stdout: ``<run-id>: mirrored to PATH``,
``skipped (...)``, ``refused: ...`` or ``failed: ...``. The rules are those of
:mod:`srez_client.mirror_watch`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from srez_client.backends.base import BackendSettings
from srez_client.errors import UsageError
from srez_client.runs import scratch_dir
from srez_client.sanitize import sanitize_line

if TYPE_CHECKING:
    from srez_client.mirror_watch import MirrorOutcome

EXIT_REFUSED = 2
"""``srez mirror RUN`` of a run that may not be mirrored here."""


def add_mirror_command(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``mirror`` to the subcommands ``sub`` of ``srez``."""
    m = sub.add_parser("mirror", help="copy stopped docker runs into their results folders")
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
    m.set_defaults(func=cmd_mirror)


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
    from srez_client.backends.docker import DockerBackend  # the SDK is imported only here
    from srez_client.mirror_watch import mirror_stopped, watch

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
