"""``srez view``'s server through real loopback HTTP: the token, Host and Origin rules, hosted
mode, the runs list and a run's views, and what an agent wrote shown as text (docs/view.md)."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from html.parser import HTMLParser
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from web_kit import (
    ESCAPES,
    HOSTILE_ID,
    PAYLOAD,
    SLOW_AGENT,
    hostile_run,
    real_results,
    reference_edit,
    signed_in,
    ticket_for,
)

from srez_client.web.app import make_app
from srez_client.web.security import CSP, HEADERS, TICKET_S, allowed_hosts
from srez_client.web.state import ViewServer
from srez_env.tasks import load_tasks


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("results")
    ids = real_results(root)
    hostile_run(root)
    return root, ids


async def _serve(root: Path, *, hosted: bool = False) -> tuple[TestServer, ViewServer]:
    view = ViewServer(root, hosted=hosted)
    await view.refresh(force=True)
    server = TestServer(make_app(view), host="127.0.0.1")
    await server.start_server()
    assert server.port is not None
    view.gate.hosts = allowed_hosts("127.0.0.1", server.port)
    return server, view


@pytest.fixture
async def served(results: tuple[Path, list[str]]) -> AsyncIterator[tuple[str, ViewServer]]:
    server, view = await _serve(results[0])
    yield f"http://127.0.0.1:{server.port}", view
    await server.close()


@pytest.fixture
async def session(served: tuple[str, ViewServer]) -> AsyncIterator[aiohttp.ClientSession]:
    base, view = served
    async with await signed_in(base, view.gate.token) as s:
        yield s


async def test_the_printed_token_opens_once_and_is_traded_for_a_secret_no_cookie_carries(
    served: tuple[str, ViewServer],
) -> None:
    """The page and its files need nothing and hold no secret; the token is traded once for a
    session secret that the answer sets in no cookie (a cookie would reach every port of the
    host); the token offered again, by anyone, opens nothing."""
    base, view = served
    async with aiohttp.ClientSession(base_url=base, headers={"Origin": base}) as s:
        async with s.get(f"/?token={view.gate.token}") as r:
            page = await r.text()
            assert r.status == 200 and r.headers["Content-Security-Policy"] == CSP
        async with s.get("/static/app.js") as r:
            script = await r.text()
        assert view.gate.token not in page and view.gate.token not in script
        async with s.post("/api/session", json={"token": view.gate.token}) as r:
            assert r.status == 200 and "Set-Cookie" not in r.headers
            secret = (await r.json())["secret"]
        assert secret != view.gate.token and len(s.cookie_jar) == 0
        async with s.post("/api/session", json={"token": view.gate.token}) as r:
            assert r.status == 403
            assert "used already" in (await r.json())["error"]
        async with s.get("/api/runs", headers={"Authorization": f"Bearer {secret}"}) as r:
            assert r.status == 200
        for bad in ({"token": 7}, [], "x"):
            async with s.post("/api/session", json=bad) as r:
                assert r.status == 400 and "send {" in (await r.json())["error"]


@pytest.mark.parametrize("path", ["/api/runs", "/api/config", f"/api/runs/{HOSTILE_ID}"])
async def test_without_the_secret_nothing_answers(
    served: tuple[str, ViewServer], path: str
) -> None:
    base, view = served
    async with aiohttp.ClientSession() as s:
        async with s.get(f"{base}{path}") as r:
            assert r.status == 401
            assert "open the address srez view printed" in await r.text()
        for credential in ("Bearer not-the-secret", f"Bearer {view.gate.token}", "Basic x"):
            async with s.get(f"{base}{path}", headers={"Authorization": credential}) as r:
                assert r.status == 401
        async with s.get(f"{base}{path}?token={view.gate.token}") as r:
            assert r.status == 401  # the token is no credential: only its trade is


async def test_a_ticket_opens_its_one_path_once_and_not_after_it_expired(
    served: tuple[str, ViewServer], session: aiohttp.ClientSession
) -> None:
    """A WebSocket or a download opens with a ticket: good once, for its path, for 30 s."""
    base, view = served
    path = f"/api/runs/{HOSTILE_ID}/download/dialog.jsonl"
    with_ticket = await ticket_for(session, path)
    async with aiohttp.ClientSession(base_url=base) as bare:  # no secret: the ticket alone
        async with bare.get(with_ticket.replace(path, f"/api/runs/{HOSTILE_ID}")) as r:
            assert r.status == 403  # another path
        async with bare.get(with_ticket) as r:
            assert r.status == 403  # spent on the refusal above: good once, whatever happened
        with_ticket = await ticket_for(session, path)
        async with bare.get(with_ticket) as r:
            assert r.status == 200 and r.headers["Content-Disposition"].startswith("attachment")
        async with bare.get(with_ticket) as r:
            assert r.status == 403 and "spent, expired" in await r.text()
        late = await ticket_for(session, path)
        ticket = late.split("ticket=")[1]
        until, bound = view.gate.tickets[ticket]
        view.gate.tickets[ticket] = (until - TICKET_S - 1, bound)  # as if 31 s had passed
        async with bare.get(late) as r:
            assert r.status == 403
    async with session.post("/api/ticket", json={"path": "/etc/passwd"}) as r:
        assert r.status == 400


async def test_a_foreign_host_header_is_refused_before_anything_else(
    served: tuple[str, ViewServer],
) -> None:
    base, view = served
    async with aiohttp.ClientSession() as s:
        headers = {"Host": "attacker.example:80", "Origin": "http://attacker.example:80"}
        async with s.post(
            f"{base}/api/session", json={"token": view.gate.token}, headers=headers
        ) as r:
            assert r.status == 421
            assert "Host 'attacker.example:80'" in await r.text()
    assert not view.gate.traded


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
async def test_a_request_a_browser_marks_as_from_elsewhere_is_refused_whatever_it_carries(
    session: aiohttp.ClientSession, site: str
) -> None:
    """``Sec-Fetch-Site``, a second layer: another port of this host is ``same-site``."""
    for path in ("/api/runs", "/", "/static/app.js"):
        async with session.get(path, headers={"Sec-Fetch-Site": site}) as r:
            assert r.status == 403 and site in await r.text()
    async with session.get("/api/runs", headers={"Sec-Fetch-Site": "same-origin"}) as r:
        assert r.status == 200


async def test_websockets_and_posts_need_this_servers_origin(
    session: aiohttp.ClientSession,
) -> None:
    for origin in ("", "http://attacker.example", "null"):
        headers = {"Origin": origin}
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(f"/api/runs/{HOSTILE_ID}/live", headers=headers)
        assert refused.value.status == 403
        async with session.post(f"/api/runs/{HOSTILE_ID}/stop", headers=headers) as r:
            assert r.status == 403


async def test_errors_aiohttp_raises_carry_the_security_headers(
    session: aiohttp.ClientSession,
) -> None:
    for method, path in (("GET", "/no/such/page"), ("DELETE", "/api/runs")):
        async with session.request(method, path) as r:
            assert r.status in (404, 405)
            assert {k: r.headers.get(k) for k in HEADERS} == HEADERS


async def test_hosted_mode_refuses_stop_remove_live_and_terminal(
    results: tuple[Path, list[str]],
) -> None:
    server, view = await _serve(results[0], hosted=True)
    base = f"http://127.0.0.1:{server.port}"
    try:
        async with await signed_in(base, view.gate.token) as s:
            async with s.get("/api/config") as r:
                assert await r.json() == {"hosted": True, "live": False, "terminal": False}
            origin = {"Origin": base}
            for action in ("stop", "remove", "detach"):
                async with s.post(f"/api/runs/{HOSTILE_ID}/{action}", headers=origin) as r:
                    assert r.status == 403
                    assert (await r.json())[
                        "error"
                    ] == f"this server is hosted (read-only): no {action} here"
            for action in ("live", "terminal"):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await s.ws_connect(f"/api/runs/{HOSTILE_ID}/{action}", headers=origin)
                assert refused.value.status == 403
    finally:
        await server.close()


async def test_the_runs_list_filters_sorts_and_pages(
    session: aiohttp.ClientSession, results: tuple[Path, list[str]]
) -> None:
    _, ids = results
    async with session.get(
        "/api/runs", params={"per_page": "4", "sort": "task_id", "order": "asc"}
    ) as r:
        first = await r.json()
    assert first["total"] == len(ids) + 1 and first["pages"] == 2 and len(first["rows"]) == 4
    assert [row["task_id"] for row in first["rows"]] == sorted(
        row["task_id"] for row in first["rows"]
    )
    assert first["facets"]["agent"] == ["evil-agent", "heuristic", "scripted"]
    assert first["counts"] == {
        "running": 0,
        "exited": 0,
        "finished": len(ids) + 1,
        "all": len(ids) + 1,
    }
    async with session.get("/api/runs", params={"task": "sre-007", "agent": "scripted"}) as r:
        only = (await r.json())["rows"]
    assert [(row["task_id"], row["agent"], row["resolved"]) for row in only] == [
        ("sre-007", "scripted", True)
    ]
    async with session.get("/api/runs", params={"q": "EVIL"}) as r:
        assert [row["run_id"] for row in (await r.json())["rows"]] == [HOSTILE_ID]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"sort": "secret"}, "sort must be one of finished_at, task_id, model, agent, status, reward, steps, got 'secret'"),
        ({"per_page": "0"}, "per_page must be a whole number from 1 to 500, got '0'"),
        ({"tab": "deleted"}, "tab must be one of running, exited, finished, all, got 'deleted'"),
        ({"status": "maybe"}, "status must be one of running, exited, ok, error, resolved, unresolved, got 'maybe'"),
    ],
)  # fmt: skip
async def test_a_bad_list_request_gets_one_line_saying_what_is_allowed(
    session: aiohttp.ClientSession, params: dict[str, str], message: str
) -> None:
    async with session.get("/api/runs", params=params) as r:
        assert r.status == 400
        assert await r.json() == {"error": message}


async def test_a_run_shows_its_dialog_diff_truth_and_grade(
    session: aiohttp.ClientSession, results: tuple[Path, list[str]]
) -> None:
    root, _ = results
    async with session.get("/api/runs", params={"task": "sre-011", "agent": "scripted"}) as r:
        run_id = (await r.json())["rows"][0]["run_id"]
    async with session.get(f"/api/runs/{run_id}") as r:
        view = await r.json()
    meta, dialog = view["meta"], view["dialog"]
    assert (meta["task_id"], meta["difficulty"], meta["agent"], meta["backend"]) == (
        "sre-011",
        "hard",
        "scripted",
        "inline",
    )
    assert meta["brief"] == next(t for t in load_tasks() if t.id == "sre-011").incident.brief
    assert "results" not in meta["settings"]  # a hosted page does not publish the server's paths
    kinds = [item["kind"] for item in dialog["items"]]
    assert kinds[:2] == ["session_started", "task_prompt"] and kinds[-1] == "session_end"
    assert dialog["footer"]["text"].startswith("Session complete")
    assert all(item["status"] == "success" for item in dialog["items"] if item["kind"] == "tool")
    changes = view["changes"]
    assert changes["sides"] == ["agent", "truth", "split"]
    assert [c["path"] for c in changes["agent"]["cards"]] == [reference_edit("sre-011")[0]]
    assert (
        changes["truth"]["raw"]
        == (next(root.glob(f"*/*/*/{run_id}")) / "reference.patch").read_text()
    )
    assert changes["similarity"]["colour"] == "green"
    assert [c["state"] for c in view["evaluation"]["checks"]] == ["pass"] * 5
    async with session.get(f"/api/runs/{run_id}/download/patch.diff") as r:
        assert await r.text() == changes["agent"]["raw"]


class _Tags(HTMLParser):
    """The tags and attributes of an HTML fragment, as a browser would parse them."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.add(tag)
        self.attrs += attrs


CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _controls(value: object, path: str = "") -> Iterator[str]:
    """Paths of strings holding a control or bidi character (a terminal or page would obey)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _controls(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _controls(item, f"{path}[{i}]")
    elif isinstance(value, str) and CONTROL.search(value):
        yield f"{path}: {value[:60]!r}"


async def test_what_the_agent_wrote_is_shown_as_text(session: aiohttp.ClientSession) -> None:
    async with session.get(f"/api/runs/{HOSTILE_ID}") as r:
        view = await r.json()
    assert not list(_controls(view)), list(_controls(view))[:3]
    assistant = next(i for i in view["dialog"]["items"] if i["kind"] == "assistant")
    html = assistant["html"]
    tags = _Tags()
    tags.feed(html)
    assert tags.seen <= {"h1", "p"} and tags.attrs == []  # no script, no img, no link made
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html  # shown, not run
    tool = next(i for i in view["dialog"]["items"] if i["kind"] == "tool")
    assert (
        "<script>" in tool["title"] and "<script>" in tool["body"]
    )  # text: the page sets textContent
    assert PAYLOAD.replace(ESCAPES, "") in tool["body"]


async def test_a_link_planted_in_a_run_folder_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    hostile_run(tmp_path / "results", planted_link_to=secret)
    server, view = await _serve(tmp_path / "results", hosted=True)
    try:
        async with await signed_in(f"http://127.0.0.1:{server.port}", view.gate.token) as s:
            async with s.get(f"/api/runs/{HOSTILE_ID}") as r:
                assert "TOP SECRET" not in await r.text()
            async with s.get(f"/api/runs/{HOSTILE_ID}/download/dialog.jsonl") as r:
                assert r.status == 404
                assert await r.json() == {
                    "error": f"archive/dialog.jsonl is missing from run {HOSTILE_ID}"
                }
    finally:
        await server.close()


async def test_a_run_folder_whose_summary_is_a_link_is_not_listed(tmp_path: Path) -> None:
    folder = hostile_run(tmp_path / "results")
    (tmp_path / "summary.json").write_bytes((folder / "summary.json").read_bytes())
    (folder / "summary.json").unlink()
    (folder / "summary.json").symlink_to(tmp_path / "summary.json")
    view = ViewServer(tmp_path / "results")
    await view.refresh(force=True)
    assert view.index.rows() == []


async def test_unknown_runs_and_files_get_a_clear_404(session: aiohttp.ClientSession) -> None:
    async with session.get("/api/runs/20990101T000000Z-deadbeef") as r:
        assert r.status == 404
        assert await r.json() == {
            "error": "no finished run '20990101T000000Z-deadbeef' in this results folder"
        }
    async with session.get(f"/api/runs/{HOSTILE_ID}/download/result.json") as r:
        assert (await r.json())[
            "error"
        ] == "no download 'result.json' (one of dialog.jsonl, patch.diff)"
    async with session.get("/static/../../etc/passwd") as r:
        assert r.status in (401, 404)


async def test_the_leaderboard_and_the_matrix(session: aiohttp.ClientSession) -> None:
    async with session.get("/api/leaderboard") as r:
        board = await r.json()
    assert board["report"]["leaderboard"][0] == "scripted"
    scripted = next(a for a in board["report"]["agents"] if a["agent"] == "scripted")
    assert scripted["overall"]["mean_reward"] == 1.0 and "mean_reward" in scripted["overall"]["ci"]
    async with session.get("/api/matrix") as r:
        matrix = await r.json()
    assert matrix["tasks"] == ["sre-001", "sre-007", "sre-011"]
    assert matrix["agents"] == ["evil-agent", "heuristic", "scripted"]
    column = matrix["agents"].index("scripted")
    assert all(row[column]["reward"] == 1.0 for row in matrix["cells"])


async def test_compare_two_agents_on_one_task(
    session: aiohttp.ClientSession, results: tuple[Path, list[str]]
) -> None:
    scripted, heuristic = results[1][4:6]  # sre-011's two runs
    async with session.get("/api/compare", params={"a": scripted, "b": heuristic}) as r:
        assert r.status == 200, await r.text()
        both = await r.json()
    async with session.get(f"/api/runs/{heuristic}") as r:
        alone = await r.json()
    assert both["same_task"] is True
    a, b = both["runs"]
    assert (a["run_id"], a["agent"], b["agent"]) == (scripted, "scripted", "heuristic")
    assert a["task_id"] == b["task_id"] == "sre-011" and a["reward"] == 1.0 and a["resolved"]
    assert (
        b["reward"] == alone["evaluation"]["reward"] and b["steps"] == alone["evaluation"]["steps"]
    )
    assert b["diff"] == alone["changes"]["agent"]["totals"]
    assert a["tool_calls"] > 0 and a["similarity"]
    assert [c["name"] for c in both["checks"]] == ["valid", "func", "safe", "intent", "rca"]
    assert all(c["states"][0] == "pass" for c in both["checks"])
    assert [c["states"][1] for c in both["checks"]] == [
        c["state"] for c in alone["evaluation"]["checks"]
    ]
    edited = {
        "path": reference_edit("sre-011")[0],
        "sides": ["M +1 -1", both["files"][0]["sides"][1]],
    }
    assert edited in both["files"]
    async with session.get("/api/compare", params={"a": scripted, "b": HOSTILE_ID}) as r:
        assert (await r.json())["same_task"] is False


@pytest.mark.parametrize(
    ("params", "status", "says"),
    [
        ({}, 400, "compare takes two different run ids"),
        ({"a": HOSTILE_ID, "b": HOSTILE_ID}, 400, "compare takes two different run ids"),
        ({"a": HOSTILE_ID, "b": "20990101T000000Z-deadbeef"}, 404, "no finished run"),
    ],
)
async def test_a_bad_compare_request_says_what_it_takes(
    session: aiohttp.ClientSession, params: dict[str, str], status: int, says: str
) -> None:
    async with session.get("/api/compare", params=params) as r:
        assert r.status == status
        assert says in (await r.json())["error"]


_ = web  # the application type of make_app


def test_the_host_names_answered_to() -> None:
    assert allowed_hosts("127.0.0.1", 8080) == {"127.0.0.1:8080", "localhost:8080"}
    assert allowed_hosts("0.0.0.0", 443, ["srez.example.org"]) == {
        "0.0.0.0:443",
        "srez.example.org:443",
    }
    assert "srez.example.org" in allowed_hosts("127.0.0.1", 80, ["srez.example.org"])  # no port


async def test_stop_and_remove_of_a_live_local_run_are_idempotent(tmp_path: Path) -> None:
    from srez_client.web.live import BackendLiveRuns

    (tmp_path / "slow.py").write_text(SLOW_AGENT)
    results = tmp_path / "results"
    env = {**os.environ, "SREZ_STATE": str(tmp_path / "state")}
    run = await asyncio.create_subprocess_exec(  # noqa: TID251 - a subprocess, not a task
        sys.executable, "-m", "srez_client.cli", "run", "--backend", "local", "--task", "sre-001",
        "--agent", "cmd:slow", "--agent-cmd", f"{sys.executable} {tmp_path / 'slow.py'}",
        "--results", str(results), env=env, cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    results.mkdir(exist_ok=True)
    env.pop("SREZ_TUI_BACKENDS", None)  # the backends chosen as srez view chooses them: local
    view = ViewServer(results, live=BackendLiveRuns.from_env(env, backend=None, results=results))
    server = TestServer(make_app(view), host="127.0.0.1")
    await server.start_server()
    assert server.port is not None
    view.gate.hosts = allowed_hosts("127.0.0.1", server.port)
    base = f"http://127.0.0.1:{server.port}"
    try:
        async with await signed_in(base, view.gate.token) as s:
            rows: list[dict[str, object]] = []
            for _ in range(100):
                async with s.get("/api/runs", params={"tab": "running"}) as r:
                    rows = (await r.json())["rows"]
                if rows:
                    break
                await asyncio.sleep(0.2)
            (live,) = rows
            origin = {"Origin": base}
            texts = []
            for action in ("detach", "stop", "stop", "remove", "remove"):
                async with s.post(f"/api/runs/{live['run_id']}/{action}", headers=origin) as r:
                    assert r.status == 200, await r.text()
                    texts.append((await r.json())["text"])
            assert texts[0].startswith("detached from") and texts[1].startswith("stopped")
            assert texts[3].startswith("removed") and "not live here" in texts[4]
        await asyncio.wait_for(run.communicate(), 60)
    finally:
        if run.returncode is None:
            run.kill()
            await run.communicate()
        await server.close()
