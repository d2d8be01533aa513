"""Live runs in ``srez view``: the backends' runs, their stream, their terminal, Stop and Remove.

The browser never talks to a run's daemon: the view server reads each open run through the TUI's
:class:`~srez_client.tui.source_live.LiveRunSource` (which holds the daemon's token and proves
the daemon is the run's before trusting it) and relays what the page needs over one WebSocket
per open run. When the run ends, the socket says so and the page reads the same views from the
results folder the run was mirrored to, without a reload.

Stop, Remove and Detach do what the TUI's detach dialog does and are idempotent: stopping a
stopped run, removing a removed one or detaching twice answers what the state is, never an error.
The terminal relays keystrokes and output between the page and the daemon's pty, where the
backend can exec and ``SREZ_TERMINAL`` (default on) allows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import aiohttp
import orjson
from aiohttp import web

from srez_client.backends.base import Backend, RunHandle
from srez_client.backends.registry import LIVE_BACKENDS_VAR
from srez_client.errors import ClientError
from srez_client.tui.source import RunSource, SourceUnavailable
from srez_client.tui.source_live import LiveRunSource
from srez_client.web.catalog import RunRow
from srez_client.web.state import SERVER, LiveRuns, ViewServer
from srez_client.web.views import RunView
from srez_core.aio import spawn

logger = logging.getLogger(__name__)

ACTIONS: Final = ("stop", "remove", "detach")


class BackendChoice:
    """The backends a view server lists live runs on, chosen as ``srez tui`` chooses them
    (:func:`~srez_client.backends.registry.live_backend_names`: ``$SREZ_TUI_BACKENDS``, else
    ``local`` and every backend this state launched runs on), and chosen again whenever this
    state's ledger changes: a docker or ray run launched while the server runs is listed too."""

    def __init__(self, env: Mapping[str, str]) -> None:
        from srez_client.backends.config import BackendSettings
        from srez_client.backends.state import Ledger

        self.env = dict(env)
        self.settings = BackendSettings.from_env(self.env)
        self.ledger = Ledger(self.settings.state_dir)
        self._seen: tuple[int, int] | None = None
        self._made: dict[str, Backend] = {}
        self._chosen: list[Backend] = []

    def names(self) -> list[str]:
        """The names of the backends to list now."""
        from srez_client.backends.registry import live_backend_names

        return live_backend_names(self.env, self.ledger.backends())

    def backends(self) -> list[Backend]:
        """The backends to list now (each made once; one that cannot be made here, a missing
        SDK or a bad setting, is left out with one warning)."""
        from srez_client.backends.registry import get_backend

        changed = self.ledger.changed()
        if changed == self._seen:
            return self._chosen
        chosen = []
        for name in self.names():
            if name not in self._made:
                try:
                    self._made[name] = get_backend(name, self.settings)
                except (ClientError, ImportError) as e:
                    logger.warning("live runs of the %s backend are not listed: %s", name, e)
                    continue
            chosen.append(self._made[name])
        self._seen, self._chosen = changed, chosen
        return chosen


class BackendLiveRuns:
    """The runs of some backends that have not finished yet."""

    def __init__(self, backends: list[Backend] | BackendChoice, *, terminal: bool = True) -> None:
        self._backends = backends
        self.terminal = terminal
        self._handles: dict[str, tuple[Backend, RunHandle]] = {}
        self._unlisted: dict[str, str] = {}
        """The last listing error of each backend (warned once, until it lists again)."""

    @property
    def backends(self) -> list[Backend]:
        """The backends listed now."""
        chosen = self._backends
        return chosen.backends() if isinstance(chosen, BackendChoice) else chosen

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], *, backend: str | None, results: Path
    ) -> BackendLiveRuns:
        """The backends ``srez tui`` would look at (:class:`BackendChoice`), or ``backend``."""
        wanted = dict(env)
        if backend is not None:
            wanted[LIVE_BACKENDS_VAR] = backend
        return cls(BackendChoice(wanted), terminal=env.get("SREZ_TERMINAL", "1") != "0")

    async def rows(self) -> list[RunRow]:
        out: list[RunRow] = []
        handles: dict[str, tuple[Backend, RunHandle]] = {}
        for backend in self.backends:
            try:
                listed = await backend.list(include_exited=True)
            except ClientError as e:
                if self._unlisted.get(backend.name) != str(e):  # once, not every 2 s
                    logger.warning("could not list the %s backend's runs: %s", backend.name, e)
                self._unlisted[backend.name] = str(e)
                continue
            self._unlisted.pop(backend.name, None)
            for handle in listed:
                handles[handle.run_id] = (backend, handle)
                if handle.finished and handle.status != "running":
                    continue  # its results folder shows it
                out.append(
                    RunRow(
                        run_id=handle.run_id,
                        task_id=handle.task_id,
                        model=handle.model,
                        agent=handle.agent,
                        state="running" if handle.status == "running" else "exited",
                        status=handle.status,
                        backend=handle.backend,
                    )
                )
        self._handles = handles
        return out

    def source(self, run_id: str) -> RunSource | None:
        found = self._handles.get(run_id)
        if found is None:
            return None
        backend, handle = found
        return LiveRunSource(backend, handle, terminal_allowed=self.terminal)

    async def act(self, run_id: str, action: str) -> str:
        found = self._handles.get(run_id)
        if found is None:
            return f"run {run_id} is not live here (already removed, or never seen)"
        backend, handle = found
        if action == "detach":
            return f"detached from {run_id}; it goes on"
        if not handle.owned:
            return f"run {run_id} belongs to another owner: listed, not acted on"
        if action == "stop":
            await backend.stop(handle)
            return f"stopped {run_id} (its results are mirrored)"
        await backend.remove(handle)
        self._handles.pop(run_id, None)
        return f"removed {run_id}'s state (its results are kept)"

    async def close(self) -> None:
        """Nothing is held between requests."""


def _server(request: web.Request) -> tuple[ViewServer, LiveRuns]:
    server = request.app[SERVER]
    assert server.live is not None  # these routes are added only with live runs
    return server, server.live


async def _source(request: web.Request) -> tuple[RunSource, bool] | None:
    """The run's live source (connected), or its finished one; and whether it is live."""
    server, live = _server(request)
    run_id = request.match_info["run_id"]
    await server.refresh()
    finished = server.finished_source(run_id)
    if finished is not None:
        return finished, False
    await server.rows()  # the backends listed again: a run launched since is known
    source = live.source(run_id)
    if source is None:
        return None
    await source.connect()
    return source, True


async def live_view(request: web.Request) -> web.StreamResponse:
    """A run's snapshot, then what changes, one JSON text frame each, until the run ends."""
    ws = web.WebSocketResponse(heartbeat=20.0)
    await ws.prepare(request)
    found = await _source(request)
    if found is None:
        await ws.send_str(orjson.dumps({"type": "error", "error": "no such run here"}).decode())
        await ws.close()
        return ws
    source, _ = found
    view = RunView(source)
    try:
        await view.open()
        await ws.send_str(
            orjson.dumps({"type": "snapshot", "view": await view.snapshot()}).decode()
        )
        async for frame in view.follow():
            if ws.closed:
                break
            await ws.send_str(orjson.dumps(frame).decode())
    except (ClientError, SourceUnavailable, ConnectionResetError) as e:
        with contextlib.suppress(ConnectionResetError):
            await ws.send_str(orjson.dumps({"type": "error", "error": str(e)}).decode())
    finally:
        await source.close()
        await ws.close()
    return ws


async def act(request: web.Request) -> web.StreamResponse:
    """``POST /api/runs/{id}/{stop|remove|detach}``."""
    action = request.match_info["action"]
    _, live = _server(request)
    try:
        text = await live.act(request.match_info["run_id"], action)
    except ClientError as e:
        return web.json_response({"error": str(e)}, status=409)
    return web.json_response({"ok": True, "text": text})


async def terminal(request: web.Request) -> web.StreamResponse:
    """A pty in the run, relayed: page keystrokes (binary) in, the shell's output out."""
    ws = web.WebSocketResponse(heartbeat=20.0)
    await ws.prepare(request)
    found = await _source(request)
    if found is None or not found[1]:
        await ws.close(code=4404, message=b"no live run with a terminal here")
        return ws
    source = found[0]
    try:
        pty = await source.pty(80, 24)
    except (SourceUnavailable, ClientError) as e:
        await ws.close(code=4403, message=str(e).encode()[:120])
        await source.close()
        return ws

    async def out() -> None:
        async for msg in pty:
            if msg.type == aiohttp.WSMsgType.BINARY:
                await ws.send_bytes(msg.data)
            elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.ERROR):
                break
        await ws.close()

    pump = spawn(out(), name="view-terminal-out")
    try:
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.BINARY:
                await pty.send_bytes(msg.data)
            elif msg.type == aiohttp.WSMsgType.TEXT:  # a resize, as the daemon reads it
                await pty.send_str(msg.data)
    finally:
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
        await pty.close()
        await source.close()
    return ws


def add_live_routes(app: web.Application) -> None:
    """The routes of live runs (never added to a hosted server)."""
    app.router.add_get("/api/runs/{run_id}/live", live_view)
    app.router.add_get("/api/runs/{run_id}/terminal", terminal)
    app.router.add_post("/api/runs/{run_id}/{action:stop|remove|detach}", act)
