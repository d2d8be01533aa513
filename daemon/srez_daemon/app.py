"""``create_app(settings)``: the daemon's aiohttp application (docs/design.md §4).

The factory does the cheap, security-relevant work up front: it reads the token (fail closed) and
checks that ``run.json`` names a packaged task (fail fast). It registers every route of the route
table (:data:`srez_daemon.protocol.routes.ROUTES`), so aiohttp's router answers an unknown path
(404), a wrong method (405 with ``Allow``) and HEAD wherever GET is. The daemon then listens at
once and answers ``/api/health`` with phase ``starting`` while :mod:`srez_daemon.runtime` (the
simulator, the wire models, the services) is imported in the background and the run starts;
until then :func:`readiness_middleware` answers every other route ``503 unavailable``. There is
no module-level state, so every test gets a fresh app.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

import orjson
from aiohttp import web

from srez_core.aio import spawn
from srez_core.wire_version import PROTOCOL_VERSION, srez_version
from srez_daemon.auth import load_token, make_auth_middleware
from srez_daemon.errors import RunSetupError
from srez_daemon.http import MAX_BODY, Handler, error_response, errors_middleware
from srez_daemon.probe import terminal_available
from srez_daemon.protocol.routes import HEALTH, ROUTES, Route
from srez_daemon.settings import DaemonSettings

if TYPE_CHECKING:
    from srez_daemon.agent_start import EarlyAgent
    from srez_daemon.runtime import Runtime

logger = logging.getLogger(__name__)

STARTING: Final = "the run is still starting; retry in a moment"


def check_run_folder(settings: DaemonSettings) -> None:
    """Fails fast, before listening, on a run folder that cannot be run (one-line reason)."""
    path = settings.paths.run_json
    try:
        manifest = orjson.loads(path.read_bytes())
    except OSError as e:
        msg = f"cannot read {path}: {e.strerror}"
        raise RunSetupError(msg) from e
    except orjson.JSONDecodeError as e:
        msg = f"{path} is not JSON: {e}"
        raise RunSetupError(msg) from e
    task_id = manifest.get("task_id") if isinstance(manifest, dict) else None
    if settings.task_file is not None:  # a task handed over by the host (checked as it loads)
        if not settings.task_file.is_file():
            msg = f"SREZ_TASK_FILE {settings.task_file} is not a file"
            raise RunSetupError(msg)
        return
    spec = importlib.util.find_spec("srez_env")
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not isinstance(task_id, str) or not any(
        (Path(folder) / "tasks" / f"{task_id}.yaml").is_file() for folder in folders
    ):
        msg = f"{path}: task_id {task_id!r} names no packaged task (sre-001 ... sre-040)"
        raise RunSetupError(msg)


class RunHost:
    """Answers health at once, and hands every other route to the runtime once it is loaded."""

    def __init__(self, settings: DaemonSettings, environ: dict[str, str] | None) -> None:
        self.settings = settings
        self.environ = environ
        self.runtime: Runtime | None = None
        self.failure: str | None = None
        self.started = time.monotonic()
        self.version = srez_version()
        self.terminal = terminal_available()
        self.settled = asyncio.Event()  # set once the runtime is loaded or failed to load
        self._loading: asyncio.Task[None] | None = None
        self.served_early: dict[str, Handler] = {HEALTH.name: self.health}
        """The routes answered before the runtime is loaded, by name; the runtime binds the rest."""

    @property
    def phase(self) -> str:
        if self.runtime is not None:
            return self.runtime.run.phase
        return "error" if self.failure else "starting"

    async def health(self, _request: web.Request) -> web.Response:
        body = {
            "status": "ok",
            "phase": self.phase,
            "protocol_version": PROTOCOL_VERSION,
            "version": self.version,
            "uptime_s": round(time.monotonic() - self.started, 3),
            "terminal": self.terminal,
        }
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    def handler_for(self, route: Route) -> Handler:
        """The handler registered for ``route``: its own when it is served early, otherwise one
        that hands the request to the runtime's."""
        early = self.served_early.get(route.name)
        if early is not None:
            return early
        name = route.name

        async def handle(request: web.Request) -> web.StreamResponse:
            return await self.loaded().handlers[name](request)

        return handle

    def loaded(self) -> Runtime:
        """The runtime. Called only behind :func:`readiness_middleware`, which answers 503 until
        there is one: without it, a request would end here as an internal error."""
        if self.runtime is None:
            msg = "a route of the runtime was called before the run was loaded"
            raise RuntimeError(msg)
        return self.runtime

    def needs_runtime(self, request: web.Request) -> bool:
        """Whether answering ``request`` needs the runtime: a route it binds (an unknown path or
        a wrong method is answered by the router alone)."""
        match = request.match_info
        return match.http_exception is None and match.handler not in self.served_early.values()

    def unavailable(self) -> web.Response:
        return error_response("unavailable", self.failure or STARTING)

    async def _load(self) -> None:
        early: EarlyAgent | None = None
        try:
            # the heavy imports run in a worker thread so the loop keeps answering health; the
            # agent starts first and loads beside the runtime (srez_daemon.agent_start)
            await asyncio.to_thread(importlib.import_module, "srez_daemon.agent_start")
            from srez_daemon.agent_start import start_agent_early

            early = await start_agent_early(self.settings, self.environ)
            await asyncio.to_thread(importlib.import_module, "srez_daemon.runtime")
            from srez_daemon.runtime import Runtime

            runtime = Runtime(self.settings, self.environ, early)
            check_bindings(ROUTES, self.served_early, runtime.handlers)
            await runtime.start()
            self.runtime = runtime
        except Exception as e:
            logger.exception("the run could not be loaded")
            self.failure = f"the run could not be loaded: {type(e).__name__}: {e}"
            if early is not None:
                await early.discard()
        finally:
            self.settled.set()

    async def lifecycle(self, _app: web.Application) -> AsyncIterator[None]:
        self._loading = spawn(self._load(), name="load-runtime")
        yield
        if not self._loading.done():
            await self._loading
        if self.runtime is not None:
            await self.runtime.stop()

    async def close_sessions(self, _app: web.Application) -> None:
        # on_shutdown runs before aiohttp waits for handlers: an open terminal or a long exec
        # ends now instead of holding the shutdown until the handler timeout
        if self.runtime is not None:
            await self.runtime.close_sessions()

    async def finished(self) -> None:
        """Returns once the run is over (or failed to load)."""
        await self.settled.wait()
        if self.runtime is not None:
            await self.runtime.run.finished.wait()


HOST = web.AppKey("host", RunHost)


def check_bindings(routes: Iterable[Route], early: Iterable[str], late: Iterable[str]) -> None:
    """Fails unless every route has exactly one handler, served early or by the runtime."""
    names = [route.name for route in routes]
    bound = [*early, *late]
    unbound = sorted(set(names) - set(bound))
    unknown = sorted(set(bound) - set(names))
    twice = sorted({name for name in bound if bound.count(name) > 1})
    if unbound or unknown or twice:
        msg = (
            "route handlers do not match the route table:"
            f" unbound {unbound}, unknown {unknown}, bound twice {twice}"
        )
        raise ValueError(msg)


@web.middleware
async def readiness_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answers 503 on a route the runtime serves until it is loaded (or with why it failed)."""
    host = request.app[HOST]
    if host.runtime is None and host.needs_runtime(request):
        return host.unavailable()
    return await handler(request)


def register_routes(app: web.Application, host: RunHost) -> None:
    """Adds every route of the table to the router (HEAD with every GET, as RFC 9110 wants)."""
    for route in ROUTES:
        handler = host.handler_for(route)
        if route.method == "GET":
            app.router.add_get(route.path, handler, allow_head=True)
        else:
            app.router.add_route(route.method, route.path, handler)


def create_app(
    settings: DaemonSettings, *, environ: dict[str, str] | None = None
) -> web.Application:
    """Builds the application for one run.

    Raises:
        TokenError: the token file is missing, unreadable or empty (fail closed).
        RunSetupError: ``run.json`` is unreadable or names no packaged task.
    """
    token = load_token(settings.token_file)
    check_run_folder(settings)
    app = web.Application(
        middlewares=[
            errors_middleware,
            make_auth_middleware(token, allowed_peers=settings.allowed_peers),
            readiness_middleware,
        ],
        client_max_size=MAX_BODY,
    )
    host = RunHost(settings, environ)
    app[HOST] = host
    register_routes(app, host)
    app.cleanup_ctx.append(host.lifecycle)
    app.on_shutdown.append(host.close_sessions)
    return app


__all__ = ["HOST", "RunHost", "check_bindings", "check_run_folder", "create_app"]
