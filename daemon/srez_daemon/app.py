"""``create_app(settings)``: the daemon's aiohttp application (DESIGN.md §4).

The factory reads the token (fail closed), builds the run controller, the dialog tail and stream
hub, the exec and pty services, and wires them to the routes. Everything with a lifetime starts
and stops in ``cleanup_ctx``; there is no module-level state, so every test gets a fresh app.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

import orjson
from aiohttp import web

from srez_daemon.aio import spawn
from srez_daemon.auth import load_token, make_auth_middleware
from srez_daemon.http import ApiError, error_response
from srez_daemon.openapi import openapi_document
from srez_daemon.routes import PublicRoutes
from srez_daemon.run import Frame, RunController, srez_version
from srez_daemon.services.exec import ExecService
from srez_daemon.services.limits import SessionLimiter
from srez_daemon.services.pty import PtyService, terminal_available
from srez_daemon.settings import DaemonSettings
from srez_daemon.stream import StreamHub
from srez_daemon.tail import DialogTail

logger = logging.getLogger(__name__)

SETTINGS = web.AppKey("settings", DaemonSettings)
RUN = web.AppKey("run", RunController)
HUB = web.AppKey("hub", StreamHub)
TAIL = web.AppKey("tail", DialogTail)
EXEC = web.AppKey("exec", ExecService)
PTY = web.AppKey("pty", PtyService)
MAX_BODY = 1 << 20

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes the closed-code error body; never a traceback."""
    try:
        return await handler(request)
    except ApiError as e:
        return e.response()
    except web.HTTPException as e:
        if e.status < 400:
            raise
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(
            e.status, "bad_request"
        )
        return error_response(code, f"{request.method} {request.path}: {e.reason}")  # type: ignore[arg-type]
    except Exception:
        logger.exception("unhandled error in %s %s", request.method, request.path)
        return error_response("internal", "the daemon failed to answer; see logs/daemon.log")


def create_app(
    settings: DaemonSettings, *, environ: dict[str, str] | None = None
) -> web.Application:
    """Builds the application for one run. Raises TokenError without a usable token file."""
    token = load_token(settings.token_file)
    app = web.Application(
        middlewares=[errors_middleware, make_auth_middleware(token)], client_max_size=MAX_BODY
    )
    tail = DialogTail(settings.paths.dialog)
    hub = StreamHub(tail, heartbeat_s=settings.heartbeat_s)
    routes: PublicRoutes | None = None

    def publish(frame: Frame) -> None:
        hub.publish(frame)

    run = RunController(
        settings,
        publish=publish,
        environ=environ,
        files_of=lambda: routes.changed_files() if routes else [],
    )
    limiter = SessionLimiter(settings.max_sessions)
    exec_service = ExecService(settings, limiter)
    pty_service = PtyService(settings, limiter)
    routes = PublicRoutes(run, terminal=terminal_available())

    app[SETTINGS] = settings
    app[RUN] = run
    app[TAIL] = tail
    app[HUB] = hub
    app[EXEC] = exec_service
    app[PTY] = pty_service

    routes.add_to(app)
    app.router.add_get("/api/dialog", hub.handle_dialog_page)
    app.router.add_get("/api/ws", hub.handle_ws)
    app.router.add_post("/api/exec", exec_service.handle)
    app.router.add_get("/api/pty", pty_service.handle)
    document = orjson.dumps(openapi_document(srez_version()))

    async def openapi(_request: web.Request) -> web.Response:
        return web.Response(body=document, content_type="application/json")

    app.router.add_get("/api/openapi.json", openapi)
    app.cleanup_ctx.append(_lifecycle)
    app.on_shutdown.append(_close_sockets)
    return app


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    run, tail = app[RUN], app[TAIL]
    run.finished_callbacks.append(tail.finish)  # before start: a quick run may end at once
    run.prepare()
    await tail.start()
    # the episode and the agent start in the background: the daemon answers /api/health (phase
    # "starting") as soon as it listens, instead of after the simulator and the agent are up
    starting = spawn(run.start(), name="run-start")
    yield
    if not starting.done():
        await starting
    await run.stop()
    await run.close()
    await tail.stop()


async def _close_sockets(app: web.Application) -> None:
    # on_shutdown runs before aiohttp waits for handlers: an open terminal or a long exec ends now
    # instead of holding the shutdown until the handler timeout
    await app[HUB].close()
    await app[EXEC].close()
    await app[PTY].close()
