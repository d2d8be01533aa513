"""The run's components, built once their (heavy) modules are imported: the controller, the
dialog tail and stream hub, the exec and pty services, and the handlers they bind to the routes of
the route table (:mod:`srez_daemon.protocol.routes`), by name.

:mod:`srez_daemon.app` imports this module in the background after the daemon listens, so
``/api/health`` answers while the simulator and the wire models load.
"""

from __future__ import annotations

import asyncio

import orjson
from aiohttp import web

from srez_core.aio import spawn
from srez_core.wire_version import srez_version
from srez_daemon.agent_start import EarlyAgent
from srez_daemon.http import JSON, Handler
from srez_daemon.protocol import routes
from srez_daemon.routes import PublicRoutes
from srez_daemon.run import RunController
from srez_daemon.services.exec import ExecService
from srez_daemon.services.limits import SessionLimiter
from srez_daemon.services.pty import PtyService
from srez_daemon.settings import DaemonSettings
from srez_daemon.stream import StreamHub
from srez_daemon.tail import DialogTail


class Runtime:
    """Everything that serves one run, wired together."""

    def __init__(
        self,
        settings: DaemonSettings,
        environ: dict[str, str] | None,
        early: EarlyAgent | None = None,
    ) -> None:
        self.tail = DialogTail(settings.paths.dialog)
        self.hub = StreamHub(self.tail, heartbeat_s=settings.heartbeat_s)
        self.run = RunController(settings, publish=self.hub.publish, environ=environ, early=early)
        self.public = PublicRoutes(self.run)
        limiter = SessionLimiter(settings.max_sessions)
        self.exec = ExecService(settings, limiter)
        self.pty = PtyService(settings, limiter)
        document: list[bytes] = []

        async def openapi(_request: web.Request) -> web.Response:
            # Rendered on the first request (JSON Schema generation is not something an idle
            # daemon should hold in memory), then kept.
            if not document:
                from srez_daemon.openapi import openapi_document

                document.append(orjson.dumps(openapi_document(srez_version())))
            return web.Response(body=document[0], content_type=JSON)

        self.handlers: dict[str, Handler] = {
            **self.public.handlers(),
            routes.DIALOG.name: self.hub.handle_dialog_page,
            routes.STREAM.name: self.hub.handle_ws,
            routes.EXEC.name: self.exec.handle,
            routes.PTY.name: self.pty.handle,
            routes.OPENAPI.name: openapi,
        }
        """Route name -> handler, for every route of the table but those the host serves early."""
        self._starting: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Creates the run folder's files, follows the dialog and starts the run."""
        self.run.finished_callbacks.append(self.tail.finish)  # first: a quick run may end at once
        self.run.prepare()
        await self.tail.start()
        self._starting = spawn(self.run.start(), name="run-start")

    async def close_sessions(self) -> None:
        """Closes viewers, execs and terminals at once (before aiohttp waits for handlers)."""
        await self.hub.close()
        await self.exec.close()
        await self.pty.close()

    async def stop(self) -> None:
        """SIGTERM or shutdown: ends the run (writing its summary) and stops following."""
        if self._starting is not None and not self._starting.done():
            await self._starting
        await self.run.stop()
        await self.run.close()
        await self.tail.stop()
