"""``srez-daemon``: serves one run until it is done (or, with ``--keep``, until SIGTERM)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

from aiohttp import web

from srez_core.aio import watch_children_by_pidfd
from srez_core.atomic import atomic_write_json
from srez_daemon.app import HOST, RunHost, create_app
from srez_daemon.errors import DaemonError
from srez_daemon.headless import copy_run, outcome, prepare_headless
from srez_daemon.log_limits import MalformedRequests
from srez_daemon.settings import DaemonSettings

logger = logging.getLogger("srez_daemon")


def configure_logging(settings: DaemonSettings) -> list[logging.Handler]:
    """The daemon's log: ``logs/daemon.log`` and stderr, from INFO; returns the handlers added
    to the root logger (the run template's rehearsal removes them after its episode)."""
    settings.paths.logs.mkdir(parents=True, exist_ok=True)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    handlers: list[logging.Handler] = [
        logging.FileHandler(settings.paths.log("daemon")),
        logging.StreamHandler(),
    ]
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for handler in handlers:
        handler.setFormatter(fmt)
        root.addHandler(handler)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, MalformedRequests) for f in server_log.filters):
        server_log.addFilter(MalformedRequests())
    return handlers


async def _failed(host: RunHost) -> None:
    await host.settled.wait()
    if host.failure is None:
        await asyncio.Event().wait()  # loaded fine: wait for SIGTERM instead


async def serve(settings: DaemonSettings) -> int:
    """Runs the daemon; returns the process exit code."""
    watch_children_by_pidfd()  # before the agent or any exec starts
    app = create_app(settings, environ=dict(os.environ))
    host = app[HOST]
    # a short shutdown grace: a request that arrives while the run winds down is answered or cut
    # quickly rather than holding the daemon's exit
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port, reuse_address=True)
    await site.start()
    address, port = runner.addresses[0][:2]
    logger.info("listening on %s:%s", address, port)
    if settings.endpoint_file is not None:
        atomic_write_json(
            settings.endpoint_file, {"host": address, "port": port, "pid": os.getpid()}
        )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    waiters: list[asyncio.Future[object]] = [asyncio.ensure_future(stop.wait())]
    if not settings.keep:
        waiters.append(asyncio.ensure_future(host.finished()))
    else:  # a run that fails to load ends the daemon even with --keep
        waiters.append(asyncio.ensure_future(_failed(host)))
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for waiter in waiters:
        waiter.cancel()
    if stop.is_set():
        logger.info("SIGTERM: stopping")
    await runner.cleanup()  # stops the run (writing its summary) if it is still going
    logger.info("exiting (phase %s)", host.phase)
    if host.failure:
        print(f"srez-daemon: error: {host.failure}", file=sys.stderr)
        return 2
    return 0


def main() -> None:
    """Entry point of ``srez-daemon``."""
    parser = argparse.ArgumentParser(prog="srez-daemon", description=__doc__)
    parser.add_argument(
        "--keep", action="store_true", help="keep serving after the run is done, until SIGTERM"
    )
    headless = parser.add_argument_group("headless run (no client): one episode, then exit")
    headless.add_argument("--task", help="task id, e.g. sre-007")
    headless.add_argument(
        "--agent",
        default="heuristic",
        help="scripted, heuristic, random, replay:FILE, llm or llm-json (model: SREZ_MODEL)",
    )
    headless.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    headless.add_argument("--out", type=Path, help="copy the finished run folder here")
    args = parser.parse_args()
    try:
        environ: Mapping[str, str] = os.environ
        if args.task:
            environ = prepare_headless(os.environ, args.task, args.agent, args.seed)
        settings = DaemonSettings.from_env(environ, keep=args.keep and not args.task)
        configure_logging(settings)
        code = asyncio.run(serve(settings))
        if args.task:
            if args.out is not None:
                copy_run(settings.run_dir, args.out)
            code = code or outcome(settings.run_dir)
        sys.exit(code)
    except DaemonError as e:
        print(f"srez-daemon: error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
