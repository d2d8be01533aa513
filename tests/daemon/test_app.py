"""The daemon's application in-process (``create_app`` under pytest-aiohttp): the router is the
route table, the readiness gate, 404/405/HEAD, the auth matrix and the host check (docs/security.md
§4.1 tests 2 and 6), the reference phase gate (test 9), and the served OpenAPI document.

Each app runs a real run (its agent a sleeper unless said otherwise) on the test's event loop;
what needs a process of its own (start-up refusals, signals, the token's absence from argv and
environment, schemathesis over TCP) stays in the tests that start ``srez-daemon``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from daemonkit import SLEEPER, idle_modules, prepare, reference_line
from processkit import wait_for
from pytest_aiohttp import AiohttpClient

from srez_core.clock import utc_timestamp
from srez_daemon import runtime
from srez_daemon.app import HOST, STARTING, RunHost, create_app
from srez_daemon.protocol.routes import ADMIN_HEADER, HEALTH, ROUTES
from srez_daemon.settings import DaemonSettings

Client = TestClient[web.Request, web.Application]
PATHS = sorted({r.path for r in ROUTES})


@dataclass
class Served:
    """An app being served in-process, its run host and the caller's headers."""

    client: Client
    host: RunHost
    token: str
    headers: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.headers = {"Authorization": f"Bearer {self.token}", ADMIN_HEADER: "1"}

    async def call(
        self, method: str, path: str, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> tuple[int, bytes, dict[str, str]]:
        """(status, body, headers) of one request, with the token unless ``headers`` is given."""
        given = self.headers if headers is None else headers
        async with self.client.request(method, path, headers=given, **kwargs) as resp:
            return resp.status, await resp.read(), dict(resp.headers)

    async def wait_phase(self, *phases: str, within_s: float = 60) -> str:
        """Asks health until the run is in one of ``phases``."""
        async with asyncio.timeout(within_s):
            while True:
                _, body, _ = await self.call("GET", HEALTH.path, headers={})
                phase = str(json.loads(body)["phase"])
                if phase in phases:
                    return phase
                await asyncio.sleep(0.05)


Serve = Callable[..., Awaitable[Served]]


@pytest.fixture
def serve(aiohttp_client: AiohttpClient, tmp_path: Path) -> Serve:
    async def make(*, loaded: bool = True, **settings: Any) -> Served:
        run_dir, token_file = prepare(tmp_path)
        options = {"agent_argv": SLEEPER, **settings}
        app = create_app(
            DaemonSettings(run_dir=run_dir, token_file=token_file, **options),
            environ=dict(os.environ),
        )
        served = Served(await aiohttp_client(app), app[HOST], token_file.read_text())
        if loaded:
            async with asyncio.timeout(30):
                await served.host.settled.wait()
            assert served.host.runtime is not None, served.host.failure
        return served

    return make


@pytest.fixture
def held_start(monkeypatch: pytest.MonkeyPatch) -> Iterator[asyncio.Event]:
    """Holds every run's start until the yielded event is set (at the latest when the test ends,
    so that the app can shut down)."""
    release = asyncio.Event()
    start = runtime.Runtime.start

    async def held(self: runtime.Runtime) -> None:
        await release.wait()
        await start(self)

    monkeypatch.setattr(runtime.Runtime, "start", held)
    yield release
    release.set()


def refused_credentials(token: str) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    """Credentials that must get a 401: (headers, query) by what is wrong with them."""
    return {
        "no header": ({}, {}),
        "wrong token": ({"Authorization": "Bearer " + "x" * 43}, {}),
        "token with whitespace": ({"Authorization": f"Bearer  {token} "}, {}),
        "empty token": ({"Authorization": "Bearer "}, {}),
        "another token of the same form": (
            {"Authorization": f"Bearer {secrets.token_urlsafe(32)}"},
            {},
        ),
        "token in query": ({}, {"token": token}),
    }


def error_code(body: bytes) -> str:
    return str(json.loads(body)["error"]["code"])


def allow_of(path: str) -> str:
    methods = {r.method for r in ROUTES if r.path == path}
    return ", ".join(sorted(methods | ({"HEAD"} if "GET" in methods else set())))


async def test_the_router_is_the_route_table(serve: Serve) -> None:
    served = await serve()
    registered = {
        (route.method, route.resource.canonical)
        for route in served.client.app.router.routes()
        if route.resource is not None
    }
    gets = {("HEAD", r.path) for r in ROUTES if r.method == "GET"}
    assert registered == {(r.method, r.path) for r in ROUTES} | gets


async def test_every_route_reaches_its_handler(serve: Serve) -> None:
    served = await serve()
    for route in ROUTES:
        status, body, _ = await served.call(route.method, route.path, json={})
        routing = ("not_found", "method_not_allowed", "unavailable", "unauthorized", "forbidden")
        assert status < 400 or error_code(body) not in routing, (route.name, status, body)


async def test_a_wrong_method_is_405_with_allow(serve: Serve) -> None:
    served = await serve()
    for path in PATHS:
        allow = allow_of(path)
        for method in ("GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"):
            if method in allow.split(", "):
                continue
            status, body, headers = await served.call(method, path)
            assert (status, error_code(body)) == (405, "method_not_allowed"), (method, path)
            assert headers["Allow"] == allow
            assert f"(allowed: {allow})" in json.loads(body)["error"]["message"]


async def test_head_answers_like_get_without_a_body(serve: Serve) -> None:
    served = await serve()
    for route in (HEALTH, *[r for r in ROUTES if r.name in ("run", "files", "diff")]):
        status, body, headers = await served.call("HEAD", route.path)
        get_status, _, get_headers = await served.call("GET", route.path)
        assert (status, body) == (get_status, b"")
        assert headers["Content-Type"] == get_headers["Content-Type"]


async def test_an_unknown_path_is_404_with_the_token_and_401_without(serve: Serve) -> None:
    served = await serve()
    for path in ("/api/nope", "/api/run/extra", "/nope", "/"):
        status, body, _ = await served.call("GET", path)
        assert (status, error_code(body)) == (404, "not_found"), path
        status, body, _ = await served.call("GET", path, headers={})
        assert (status, error_code(body)) == (401, "unauthorized"), path


async def test_routes_answer_503_until_the_run_is_loaded(
    serve: Serve, held_start: asyncio.Event
) -> None:
    served = await serve(loaded=False)
    status, body, _ = await served.call("GET", HEALTH.path, headers={})
    assert status == 200 and json.loads(body)["phase"] == "starting"
    for route in ROUTES:
        if route is HEALTH:
            continue
        status, body, _ = await served.call(route.method, route.path)
        assert status == 503 and json.loads(body)["error"] == {
            "code": "unavailable",
            "message": STARTING,
        }
        status, _, _ = await served.call(route.method, route.path, headers={})
        assert status == 401  # the token is checked before anything is said about the run
    assert (await served.call("DELETE", "/api/run"))[0] == 405  # the router knows already
    assert (await served.call("GET", "/api/nope"))[0] == 404
    held_start.set()
    async with asyncio.timeout(30):
        await served.host.settled.wait()
    assert (await served.call("GET", "/api/run"))[0] == 200


async def test_a_run_that_fails_to_load_says_why(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(_self: runtime.Runtime) -> None:
        msg = "no simulator today"
        raise RuntimeError(msg)

    monkeypatch.setattr(runtime.Runtime, "start", broken)
    served = await serve(loaded=False)
    async with asyncio.timeout(30):
        await served.host.settled.wait()
    status, body, _ = await served.call("GET", HEALTH.path, headers={})
    assert status == 200 and json.loads(body)["phase"] == "error"
    status, body, _ = await served.call("GET", "/api/run")
    assert status == 503 and json.loads(body)["error"]["message"] == (
        "the run could not be loaded: RuntimeError: no simulator today"
    )


def _sleeping_agents() -> list[psutil.Process]:
    """The sleeper agents this test process started that still run."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.cmdline() == list(SLEEPER) and child.status() != psutil.STATUS_ZOMBIE:
                found.append(child)
        except psutil.Error:
            continue
    return found


async def test_the_agent_starts_while_the_run_loads_and_waits_for_its_socket(
    serve: Serve, held_start: asyncio.Event
) -> None:
    served = await serve(loaded=False)
    socket_path = served.host.settings.socket_path
    await wait_for(lambda: bool(_sleeping_agents()), within_s=30)  # a step of the load
    assert served.host.phase == "starting"
    assert socket_path.stat().st_mode & 0o777 == 0o600  # bound already, the agent's alone
    (agent,) = _sleeping_agents()
    await asyncio.sleep(0.01)
    released_at = utc_timestamp(datetime.now(UTC))
    held_start.set()
    assert await served.wait_phase("agent") == "agent"
    run = served.host.loaded().run
    assert run.phase == "agent" and run.agent is not None and run.agent.pid == agent.pid
    # the agent's clock started with its process, before the episode was ready
    assert run.state.agent_started_at is not None
    assert run.state.agent_started_at < released_at


async def test_a_run_that_fails_to_load_stops_the_agent_it_started(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(_self: runtime.Runtime) -> None:
        # started before the runtime: its process exists, though on a busy machine its exec (the
        # command line the check reads) may land a moment later
        await wait_for(lambda: bool(_sleeping_agents()), within_s=10)
        msg = "no simulator today"
        raise RuntimeError(msg)

    monkeypatch.setattr(runtime.Runtime, "start", broken)
    served = await serve(loaded=False)
    async with asyncio.timeout(30):
        await served.host.settled.wait()
    assert served.host.failure == "the run could not be loaded: RuntimeError: no simulator today"
    await wait_for(lambda: _sleeping_agents() == [], within_s=10)  # killed, and reaped


async def test_auth_matrix_refuses_every_bad_credential(serve: Serve) -> None:
    """Figure: 0 non-401 answers over every route x 6 bad credentials; health stays open."""
    served = await serve()
    answers = []
    refused = refused_credentials(served.token)
    for route in [r for r in ROUTES if r.access != "open"]:
        for headers, query in refused.values():
            status, body, _ = await served.call(route.method, route.path, headers, params=query)
            answers.append((route.name, status, error_code(body)))
    assert {answer[1:] for answer in answers} == {(401, "unauthorized")}
    assert len(answers) == (len(ROUTES) - 1) * len(refused)
    status, body, _ = await served.call("GET", HEALTH.path, headers={})
    assert status == 200 and set(json.loads(body)) == {
        "status",
        "phase",
        "protocol_version",
        "version",
        "uptime_s",
        "terminal",
    }


async def test_admin_routes_need_the_claim_as_well_as_the_token(serve: Serve) -> None:
    served = await serve()
    view_only = {"Authorization": f"Bearer {served.token}"}
    for route in [r for r in ROUTES if r.access == "admin"]:
        status, body, _ = await served.call(route.method, route.path, view_only, json={})
        assert (status, error_code(body)) == (403, "forbidden"), route.name
        assert ADMIN_HEADER in json.loads(body)["error"]["message"]
        status, _, _ = await served.call(route.method, route.path, json={})
        assert status == 400, route.name  # past auth: a bad body, or not a WebSocket request


async def test_foreign_host_and_origin_are_refused_without_cors(serve: Serve) -> None:
    """Figure: 0 accepted; 0 responses carrying Access-Control-Allow-*."""
    served = await serve()
    attempts = [
        {"Host": "evil.example:4263", **served.headers},
        {"Origin": "http://evil.example", **served.headers},
        {"Host": "evil.example", "Origin": "http://evil.example"},
    ]
    for headers in attempts:
        status, body, answer = await served.call("GET", "/api/run", headers)
        assert (status, error_code(body)) == (403, "forbidden_host"), headers
        assert not any(k.lower().startswith("access-control-allow") for k in answer)
    form = {"Content-Type": "application/x-www-form-urlencoded", **served.headers}
    status, _, answer = await served.call("POST", "/api/exec", form, data=b"argv=id")
    assert status != 200 and not any(k.lower().startswith("access-control-allow") for k in answer)


async def test_reference_is_refused_for_every_request_of_the_agent_phase(serve: Serve) -> None:
    """Figure: 0 bytes of the reference in 200 requests during the agent phase; served after."""
    served = await serve(agent_time_limit_s=3.0)
    assert await served.wait_phase("agent") == "agent"
    reference_text = reference_line()
    leaked = 0
    for _ in range(100):
        for path in ("/api/reference", "/api/similarity"):
            status, body, _ = await served.call("GET", path)
            assert (status, error_code(body)) == (409, "agent_phase")
            leaked += reference_text in body.decode()
        assert not served.host.settings.paths.reference_patch.exists()
    assert leaked == 0
    await served.wait_phase("done")
    status, body, _ = await served.call("GET", "/api/reference")
    assert status == 200 and f"+{reference_text}" in body.decode()
    status, body, _ = await served.call("GET", "/api/similarity")
    assert status == 200 and json.loads(body)["reference_lines"] == 2


async def test_the_served_openapi_document_is_the_route_table(serve: Serve) -> None:
    served = await serve()
    status, body, _ = await served.call("GET", "/api/openapi.json")
    document = json.loads(body)
    served_operations = {
        (method.upper(), path) for path, item in document["paths"].items() for method in item
    }
    assert status == 200 and served_operations == {(r.method, r.path) for r in ROUTES}


async def test_the_runtime_binds_every_route_the_host_does_not(serve: Serve) -> None:
    served = await serve()
    assert served.host.runtime is not None
    bound = set(served.host.runtime.handlers) | set(served.host.served_early)
    assert bound == {r.name for r in ROUTES}


IDLE_UNNEEDED = (
    "psutil",  # the /proc sweeps: only once something escaped an exec or a terminal closes
    "ptyprocess",  # the first terminal
    "watchfiles",  # the change source off Linux (inotify here)
    "anyio",
    "multiprocessing",
    "difflib",  # the run's end (file changes, the patch)
    "srez_daemon.openapi",  # the first GET /api/openapi.json
    "litellm",
    "srez_client",
)


def test_an_idle_daemon_has_not_loaded_what_it_does_not_use(tmp_path: Path) -> None:
    """A daemon whose run is in the agent phase, at rest, holds none of the modules only a
    terminal, a sweep, the run's end or the OpenAPI document need (its idle RSS, docs/design.md
    §13.1)."""
    assert idle_modules(tmp_path, IDLE_UNNEEDED) == []
