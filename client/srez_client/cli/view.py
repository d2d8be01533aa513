"""``srez view``: the runs in a browser (:mod:`srez_client.web`).

It prints one address with the token in it and serves until Ctrl-C or SIGTERM. The address is the only
place the token appears: the page drops it from the URL at once (see
:mod:`srez_client.web.security`), and the access log is off, so no log line holds it either.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

from srez_client.errors import UsageError


async def serve(args: argparse.Namespace, ready: asyncio.Event | None = None) -> None:
    """Serves until cancelled; prints the address once listening."""
    from aiohttp import web

    from srez_client.web.app import make_app
    from srez_client.web.security import allowed_hosts
    from srez_client.web.state import ViewServer

    results: Path = args.results
    live = None
    if not args.hosted:
        from srez_client.web.live import BackendLiveRuns

        live = BackendLiveRuns.from_env(dict(os.environ), backend=args.backend, results=results)
    server = ViewServer(results, hosted=args.hosted, live=live)
    await server.refresh(force=True)
    runner = web.AppRunner(make_app(server), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port)
    await site.start()
    port = runner.addresses[0][1]  # the one chosen when --port is 0
    server.gate.hosts = allowed_hosts(args.host, port, args.allow_host)
    host = f"[{args.host}]" if ":" in args.host else args.host
    mode = "hosted, read-only" if args.hosted else "results and live runs"
    print(
        f"srez view ({mode}) of {results}: http://{host}:{port}/?token={server.gate.token}",
        flush=True,
    )
    if ready is not None:
        ready.set()
    stop = asyncio.Event()  # SIGTERM ends the server as Ctrl-C does: cleanly
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    try:
        await stop.wait()
    finally:
        if live is not None:
            await live.close()
        await runner.cleanup()


def cmd_view(args: argparse.Namespace) -> int:
    """``srez view``."""
    if not args.results.is_dir():
        msg = f"--results {args.results} is not a folder (the results root srez eval writes)"
        raise UsageError(msg)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args))
    print("srez view stopped", file=sys.stderr)
    return 0
