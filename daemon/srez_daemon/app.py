"""``create_app(settings)``: the daemon's aiohttp application (DESIGN.md §4).

The factory does the cheap, security-relevant work up front: it reads the token (fail closed) and
checks that ``run.json`` names a packaged task (fail fast). The daemon then listens at once and
answers ``/api/health`` with phase ``starting`` while :mod:`srez_daemon.runtime` (the simulator,
the wire models, the services) is imported in the background and the run starts; until then
every other route answers ``503 unavailable``. There is no module-level state, so every test gets
a fresh app.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from aiohttp import web

from srez_daemon.auth import load_token, make_auth_middleware
from srez_daemon.errors import RunSetupError
from srez_daemon.http import ApiError, error_response, http_error_response, method_not_allowed
from srez_daemon.probe import terminal_available
from srez_daemon.record.aio import spawn
from srez_daemon.settings import DaemonSettings
from srez_daemon.wire_version import PROTOCOL_VERSION, srez_version

if TYPE_CHECKING:
    from srez_daemon.runtime import Runtime

logger = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
MAX_BODY = 1 << 20


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
        return http_error_response(request, e)
    except Exception:
        logger.exception("unhandled error in %s %s", request.method, request.path)
        return error_response("internal", "the daemon failed to answer; see logs/daemon.log")


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
    spec = importlib.util.find_spec("srez_env")
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not isinstance(task_id, str) or not any(
        (Path(folder) / "tasks" / f"{task_id}.yaml").is_file() for folder in folders
    ):
        msg = f"{path}: task_id {task_id!r} names no packaged task (sre-001 ... sre-040)"
        raise RunSetupError(msg)


class RunHost:
    """Answers health at once, and routes everything else to the runtime once it is loaded."""

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

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        if self.runtime is None:
            reason = self.failure or "the run is still starting; retry in a moment"
            return error_response("unavailable", reason)
        method = "GET" if request.method == "HEAD" else request.method
        handler = self.runtime.handlers.get((method, request.path))
        if handler is not None:
            return await handler(request)
        allowed = {m for m, path in self.runtime.handlers if path == request.path}
        if request.path == "/api/health":  # served by its own route, before this one
            allowed.add("GET")
        if allowed:
            return method_not_allowed(request.method, request.path, allowed)
        return error_response("not_found", f"no route {request.path}")

    async def _load(self) -> None:
        try:
            # the heavy imports run in a worker thread so the loop keeps answering health
            await asyncio.to_thread(importlib.import_module, "srez_daemon.runtime")
            from srez_daemon.runtime import Runtime

            runtime = Runtime(self.settings, self.environ)
            await runtime.start()
            self.runtime = runtime
        except Exception as e:
            logger.exception("the run could not be loaded")
            self.failure = f"the run could not be loaded: {type(e).__name__}: {e}"
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
        middlewares=[errors_middleware, make_auth_middleware(token)], client_max_size=MAX_BODY
    )
    host = RunHost(settings, environ)
    app[HOST] = host
    app.router.add_get("/api/health", host.health)
    app.router.add_route("*", "/api/{path:.*}", host.dispatch)
    app.cleanup_ctx.append(host.lifecycle)
    app.on_shutdown.append(host.close_sessions)
    return app


__all__ = ["HOST", "RunHost", "check_run_folder", "create_app", "errors_middleware"]
