"""The ``srez view`` server: one page app over a results folder and the backends' live runs.

Routes (every one behind :mod:`srez_client.web.security`):

* ``GET /``: the page; ``GET /static/{name}``: its script and style (a fixed list of files);
  ``POST /api/session`` and ``POST /api/ticket``: the credentials (:mod:`.security`).
* ``GET /api/config``: what this server offers (hosted or not, live runs, terminal).
* ``GET /api/runs``: one page of the runs list (:func:`srez_client.web.catalog.parse_query`
  names the parameters); ``GET /api/leaderboard`` and ``GET /api/matrix``: the folder's report;
  ``GET /api/compare?a=ID&b=ID``: two finished runs side by side (:mod:`srez_client.web.compare`).
* ``GET /api/runs/{id}``: a run's views (:class:`srez_client.web.views.RunView`, built by
  :mod:`srez_client.web.pages`), the newest dialog items; ``GET /api/runs/{id}/dialog?before=N``
  the earlier ones;
  ``GET /api/runs/{id}/download/{dialog.jsonl|patch.diff}`` and ``GET /api/runs/{id}/logs/{name}``.
* ``GET /api/runs/{id}/live`` (WebSocket) and the POSTs ``stop``, ``remove`` and ``detach``, and
  the terminal: live runs only, never in hosted mode (:mod:`srez_client.web.live`).

A run is named by its id alone; the server maps ids to folders it found itself, so no path from a
request is ever opened. Bad parameters get a 400 with one line saying what is allowed.
"""

from __future__ import annotations

import asyncio
from importlib import resources
from typing import Any, Final

import orjson
from aiohttp import web

from srez_client.transfer.fs import open_file
from srez_client.web.catalog import QueryError, facets, parse_query, select
from srez_client.web.compare import compare_json
from srez_client.web.matrix import matrix_json
from srez_client.web.pages import log_range
from srez_client.web.security import TICKET_S, guard
from srez_client.web.state import SERVER, ViewServer

STATIC: Final = {
    "app.js": "text/javascript",
    "app.css": "text/css",
    "favicon.svg": "image/svg+xml",
}
"""The page's files, by name; nothing else is served from the package."""
DOWNLOADS: Final = {"dialog.jsonl": "archive/dialog.jsonl", "patch.diff": "final.patch"}
LOG_PAGE: Final = 1 << 20
"""Bytes of a log per answer (the newest first; the page asks for earlier ones)."""


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


def _bad(text: str, status: int = 400) -> web.Response:
    return _json({"error": text}, status)


async def _body(request: web.Request, field: str) -> str | None:
    """The string ``field`` of a small JSON object body, or None."""
    try:
        value = orjson.loads(await request.content.read(4096)).get(field)
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, str) else None


async def session(request: web.Request) -> web.StreamResponse:
    """``POST /api/session`` ``{"token": ...}``: the printed token traded, once, for the secret
    the page sends in its ``Authorization`` header (:mod:`srez_client.web.security`)."""
    offered = await _body(request, "token")
    if offered is None:
        return _bad('send {"token": "..."}: the token of the address srez view printed')
    secret = request.app[SERVER].gate.trade(offered)
    if secret is None:
        return _bad(
            "this address was used already or is wrong: each one srez view prints opens once", 403
        )
    return _json({"secret": secret})


async def ticket(request: web.Request) -> web.StreamResponse:
    """``POST /api/ticket`` ``{"path": "/api/runs/..."}``: a ticket to open that one path once
    (a WebSocket or a download, which carry no header) within the next 30 s."""
    path = await _body(request, "path")
    if path is None or not path.startswith("/api/runs/"):
        return _bad('send {"path": "/api/runs/..."}: the socket or download to open')
    return _json({"ticket": request.app[SERVER].gate.ticket(path), "seconds": TICKET_S})


async def page(request: web.Request) -> web.StreamResponse:
    html = resources.files(__package__).joinpath("static/index.html").read_bytes()
    return web.Response(body=html, content_type="text/html", charset="utf-8")


async def static(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    kind = STATIC.get(name)
    if kind is None:
        return _bad(f"no file {name!r} here (the page's files: {', '.join(STATIC)})", 404)
    body = resources.files(__package__).joinpath(f"static/{name}").read_bytes()
    return web.Response(body=body, content_type=kind)


async def config(request: web.Request) -> web.StreamResponse:
    server = request.app[SERVER]
    live = server.live is not None and not server.hosted
    return _json({"hosted": server.hosted, "live": live, "terminal": live})


async def runs(request: web.Request) -> web.StreamResponse:
    server = request.app[SERVER]
    try:
        query = parse_query(request.query)
    except QueryError as e:
        return _bad(str(e))
    await server.refresh()
    every = await server.rows()
    return _json({**select(every, query).as_json(), "facets": facets(every)})


async def _finished_view(server: ViewServer, run_id: str) -> dict[str, Any] | None:
    """A finished run's views, built off the event loop (:mod:`.pages`); None: no such run in
    the results folder."""
    folder = server.index.path_of(run_id)
    return None if folder is None else await server.pages.first(folder)


async def run(request: web.Request) -> web.StreamResponse:
    server = request.app[SERVER]
    run_id = request.match_info["run_id"]
    await server.refresh()
    snapshot = await _finished_view(server, run_id)
    if snapshot is None:
        return _bad(f"no finished run {run_id!r} in this results folder", 404)
    return _json(snapshot)


async def compare(request: web.Request) -> web.StreamResponse:
    """``GET /api/compare?a=ID&b=ID``: two finished runs side by side."""
    server = request.app[SERVER]
    a, b = request.query.get("a", ""), request.query.get("b", "")
    if not a or not b or a == b:
        return _bad("compare takes two different run ids: /api/compare?a=RUN&b=RUN")
    await server.refresh()
    views = []
    for run_id in (a, b):
        snapshot = await _finished_view(server, run_id)
        if snapshot is None:
            return _bad(
                f"no finished run {run_id!r} in this results folder (compare reads two)", 404
            )
        views.append(snapshot)
    return _json(compare_json(*views))


async def dialog_earlier(request: web.Request) -> web.StreamResponse:
    """``GET /api/runs/{id}/dialog?before=N``: the dialog items before index N, a page of them."""
    server = request.app[SERVER]
    run_id, before = request.match_info["run_id"], request.query.get("before", "")
    if not before.isascii() or not before.isdigit() or len(before) > 9:
        return _bad("before takes the index of a dialog item (a whole number): ?before=500")
    folder = server.index.path_of(run_id)
    if folder is None:
        return _bad(f"no finished run {run_id!r} in this results folder", 404)
    return _json(await server.pages.dialog(folder, int(before)))


async def download(request: web.Request) -> web.StreamResponse:
    server = request.app[SERVER]
    run_id, name = request.match_info["run_id"], request.match_info["name"]
    relative = DOWNLOADS.get(name)
    if relative is None:
        return _bad(f"no download {name!r} (one of {', '.join(DOWNLOADS)})", 404)
    folder = server.index.path_of(run_id)
    if folder is None:
        return _bad(f"no finished run {run_id!r} in this results folder", 404)
    parent, _, leaf = relative.rpartition("/")
    # streamed from the file opened once without following links: memory stays flat
    opened = await asyncio.to_thread(open_file, folder / parent if parent else folder, leaf)
    if opened is None:
        return _bad(f"{relative} is missing from run {run_id}", 404)
    return web.Response(
        body=opened,
        content_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{run_id}-{name}"'},
    )


async def logs(request: web.Request) -> web.StreamResponse:
    """``GET /api/runs/{id}/logs/{name}[?end=N]``: the last :data:`LOG_PAGE` bytes of a log
    before byte N (default its end), sanitised; ``X-Srez-Log-Start`` and ``X-Srez-Log-Size`` say
    where they start and how long the log is, so the page can ask for the bytes before."""
    server = request.app[SERVER]
    run_id, name = request.match_info["run_id"], request.match_info["name"]
    end_text = request.query.get("end")
    if end_text is not None and not (
        end_text.isascii() and end_text.isdigit() and len(end_text) < 16
    ):
        return _bad("end takes a byte offset (a whole number): ?end=1048576")
    source = server.finished_source(run_id)
    if source is None:
        return _bad(f"no finished run {run_id!r} in this results folder", 404)
    names = source.log_names()
    if name not in names:
        return _bad(f"run {run_id} has no log {name!r} (it has: {', '.join(names) or 'none'})", 404)
    end = None if end_text is None else int(end_text)
    found = await asyncio.to_thread(log_range, source.path, name, end, LOG_PAGE)
    if found is None:
        return _bad(f"run {run_id}'s log {name!r} is not a regular file", 404)
    text, start, size = found
    headers = {"X-Srez-Log-Start": str(start), "X-Srez-Log-Size": str(size)}
    return web.Response(text=text, content_type="text/plain", headers=headers)


async def leaderboard(request: web.Request) -> web.StreamResponse:
    server = request.app[SERVER]
    await server.refresh()
    return _json(await asyncio.to_thread(server.board.json))


async def matrix(request: web.Request) -> web.StreamResponse:
    server = request.app[SERVER]
    await server.refresh()
    return _json(matrix_json(server.index.rows()))


def make_app(server: ViewServer) -> web.Application:
    """The view server's application (answering to the Host names of ``server.gate``)."""
    app = web.Application(middlewares=[guard(server.gate)])
    app[SERVER] = server
    app.router.add_get("/", page)
    app.router.add_get("/static/{name}", static)
    app.router.add_post("/api/session", session)
    app.router.add_post("/api/ticket", ticket)
    app.router.add_get("/api/config", config)
    app.router.add_get("/api/runs", runs)
    app.router.add_get("/api/leaderboard", leaderboard)
    app.router.add_get("/api/matrix", matrix)
    app.router.add_get("/api/compare", compare)
    app.router.add_get("/api/runs/{run_id}", run)
    app.router.add_get("/api/runs/{run_id}/dialog", dialog_earlier)
    app.router.add_get("/api/runs/{run_id}/download/{name}", download)
    app.router.add_get("/api/runs/{run_id}/logs/{name}", logs)
    if server.hosted:
        app.router.add_route(
            "*", "/api/runs/{run_id}/{action:live|terminal|stop|remove|detach}", read_only
        )
    elif server.live is not None:
        from srez_client.web.live import add_live_routes

        add_live_routes(app)
    return app


async def read_only(request: web.Request) -> web.StreamResponse:
    action = request.match_info["action"]
    return _bad(f"this server is hosted (read-only): no {action} here", 403)
