"""The reference for the daemon's exec figures: the least an aiohttp server can do to answer
``POST /api/exec`` (spawn argv, collect both streams, answer JSON), with none of the daemon's
checks, caps or clean-up. Run as ``python bench/minimal_daemon.py PORT``."""

import asyncio
import subprocess
import sys

from aiohttp import web


async def execute(request: web.Request) -> web.Response:
    body = await request.json()
    proc = await asyncio.create_subprocess_exec(
        *body["argv"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await proc.communicate()
    answer = {"exit_code": proc.returncode, "stdout": out.decode(), "stderr": err.decode()}
    return web.json_response(answer)


async def health(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


if __name__ == "__main__":
    app = web.Application()
    app.router.add_post("/api/exec", execute)
    app.router.add_get("/api/health", health)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
