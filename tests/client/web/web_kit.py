"""Results folders for the ``srez view`` tests: real runs of the inline host, and a hostile run
whose every field the agent controls carries markup, script and escape sequences."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final

import aiohttp
import orjson

from fakes.socket_agent import agent_script
from srez_client.backends.inline.host import run_inline
from srez_daemon.protocol import (
    Assistant,
    SessionCompleted,
    SessionStarted,
    TaskPrompt,
    ToolCall,
    ToolResult,
    encode_entry,
)
from srez_env.tasks import load_tasks

TASKS: Final = ("sre-001", "sre-007", "sre-011")
AGENTS: Final = ("scripted", "heuristic")
HOSTILE_ID: Final = "20260101T000000Z-00badbad"
TS: Final = "2026-01-01T00:00:00Z"
SCRIPT: Final = "<script>window.__pwned = 1</script>"
IMG: Final = '<img src=x onerror="window.__pwned = 2">'
ESCAPES: Final = "\x1b[2J\x1b]0;pwned\x07\u202eevil"
PAYLOAD: Final = f"{SCRIPT} {IMG} [click](javascript:window.__pwned=3) {ESCAPES}"


def reference_edit(task_id: str) -> tuple[str, str]:
    """The one config file the task's reference fix edits, as a run's diff names it, and the
    value it writes (the scripted agent plays that fix)."""
    (task,) = load_tasks([task_id])
    (edit,) = [a for a in task.reference_fix if a.tool == "set_config"]
    service = str(edit.args["service"])
    return f"{service}/{service}.conf", str(edit.args["value"])


def real_results(
    root: Path, *, tasks: tuple[str, ...] = TASKS, agents: tuple[str, ...] = AGENTS
) -> list[str]:
    """Real inline runs of ``agents`` on ``tasks`` under ``root``; their run ids."""
    ids = []
    for task in load_tasks(tasks):
        for agent in agents:
            ids.append(run_inline(task, agent, 0, root).run_id)
    return ids


def hostile_run(root: Path, *, planted_link_to: Path | None = None, lure: str = "") -> Path:
    """A finished run whose dialog, diff, grade reasons and names carry :data:`PAYLOAD`; with
    ``planted_link_to``, its ``archive/dialog.jsonl`` is a link there instead; with ``lure``, its
    assistant offers a Markdown link to that address (the agent's own listener)."""
    folder = root / "sre-001" / "none" / "evil-agent" / HOSTILE_ID
    (folder / "archive").mkdir(parents=True)
    entries = [
        SessionStarted(seq=0, ts=TS, agent="evil-agent", model="none", task_id="sre-001", run_id=HOSTILE_ID),
        TaskPrompt(seq=1, ts=TS, text=f"Incident (sre-001): {PAYLOAD}\n{PAYLOAD}\n\nActive alerts at T0:\n- {PAYLOAD}"),
        Assistant(seq=2, ts=TS, text=f"# Plan {PAYLOAD}\n\n{PAYLOAD}" + (f"\n\n[the runbook]({lure})" if lure else "")),
        ToolCall(seq=3, ts=TS, call_id="c1", name=f"get_logs{SCRIPT}", args={"service": PAYLOAD}),
        ToolResult(seq=4, ts=TS, call_id="c1", status="success", result=PAYLOAD, duration_ms=1.0, step=1, steps_left=9),
        SessionCompleted(seq=5, ts=TS, turns=1, duration_s=0.5),
    ]  # fmt: skip
    dialog = b"".join(encode_entry(e) for e in entries)
    if planted_link_to is not None:
        (folder / "archive" / "dialog.jsonl").symlink_to(planted_link_to)
    else:
        (folder / "archive" / "dialog.jsonl").write_bytes(dialog)
    diff = f"--- a/db/db.conf\n+++ b/db/db.conf\n@@ -1 +1 @@\n-port = 5432\n+port = {PAYLOAD}\n"
    (folder / "final.patch").write_text(diff)
    (folder / "reference.patch").write_text(diff)
    checks = {
        name: {"pass": False, "reasons": [PAYLOAD]}
        for name in ("valid", "func", "safe", "intent", "rca")
    }
    grade = {
        "task_id": "sre-001",
        "difficulty": "easy",
        "agent": "evil-agent",
        "checks": checks,
        "reward": 0.0,
    }
    (folder / "result.json").write_bytes(orjson.dumps(grade))
    run = {
        "run_id": HOSTILE_ID,
        "task_id": "sre-001",
        "agent": "evil-agent",
        "model": "none",
        "backend": "inline",
    }
    (folder / "run.json").write_bytes(orjson.dumps(run))
    summary = {
        "run_id": HOSTILE_ID, "task_id": "sre-001", "agent": "evil-agent", "model": "none",
        "status": "ok", "reward": 0.0, "resolved": False, "passed": False, "steps": 1, "finished_at": TS,
    }  # fmt: skip
    (folder / "summary.json").write_bytes(orjson.dumps(summary))
    return folder


def token_of(banner: str) -> str:
    """The token in the address ``srez view`` printed."""
    found = re.search(r"\?token=([A-Za-z0-9_-]+)", banner)
    assert found is not None, banner
    return found.group(1)


SLOW_AGENT = agent_script(
    """
    for i in range(8):  # about 12 s live: time for the page to follow it and use its terminal
        call("POST", "/tools/get_alerts", {})
        time.sleep(1.5)
    call("POST", "/tools/declare_root_cause", {"service": "none", "fault": "none"})
    call("POST", "/submit", {"summary": "slow"})
    """
)


async def signed_in(base: str, token: str) -> aiohttp.ClientSession:
    """A client that did what the page does: traded the printed ``token`` for a session secret
    (``POST /api/session``) and sends it, with the page's Origin, on every request. The caller
    closes it."""
    session = aiohttp.ClientSession(base_url=base, headers={"Origin": base})
    async with session.post("/api/session", json={"token": token}) as r:
        assert r.status == 200, await r.text()
        secret = (await r.json())["secret"]
    session.headers["Authorization"] = f"Bearer {secret}"
    return session


@contextlib.asynccontextmanager
async def hosted_view(root: Path) -> AsyncIterator[aiohttp.ClientSession]:
    """A hosted ``srez view`` server over ``root`` on loopback, and a client signed in to it."""
    from aiohttp.test_utils import TestServer

    from srez_client.web.app import make_app
    from srez_client.web.security import allowed_hosts
    from srez_client.web.state import ViewServer

    view = ViewServer(root, hosted=True)
    await view.refresh(force=True)
    server = TestServer(make_app(view), host="127.0.0.1")
    await server.start_server()
    assert server.port is not None
    view.gate.hosts = allowed_hosts("127.0.0.1", server.port)
    try:
        async with await signed_in(f"http://127.0.0.1:{server.port}", view.gate.token) as s:
            yield s
    finally:
        await server.close()


async def ticket_for(session: aiohttp.ClientSession, path: str) -> str:
    """``path`` with a ticket (``POST /api/ticket``): what the page opens a socket or a
    download with."""
    async with session.post("/api/ticket", json={"path": path}) as r:
        assert r.status == 200, await r.text()
        return f"{path}?ticket={(await r.json())['ticket']}"


def planted_copy(original: Path, run_id: str, **changes: Any) -> None:
    """A copy of a real run under a new id, with ``changes`` applied to both of its grade files
    (``steps``, or ``reward`` as the number the run claims)."""
    folder = original.parent / run_id
    shutil.copytree(original, folder)
    summary = orjson.loads((folder / "summary.json").read_bytes())
    result = orjson.loads((folder / "result.json").read_bytes())
    summary["run_id"] = run_id
    if "steps" in changes:
        summary["steps"] = result["steps"] = changes["steps"]
    if "reward" in changes:
        summary["reward"] = result["reward"]["total"] = changes["reward"]
    for key in ("agent", "model", "task_id"):
        if key in changes:
            summary[key] = result[key] = changes[key]
    (folder / "summary.json").write_bytes(orjson.dumps(summary))
    (folder / "result.json").write_bytes(orjson.dumps(result))


# ------------------------------------------------------------------ a real browser

WAIT_S: Final = 30.0


def wait_css(driver: Any, css: str, count: int = 1) -> list[Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT_S).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, css)) >= count
    )
    return list(driver.find_elements(By.CSS_SELECTOR, css))


def wait_until(driver: Any, test: Callable[[Any], bool], seconds: float = WAIT_S) -> None:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # an element found, then replaced by the page's next render before it was read (the live
    # view becoming the results view), is looked for again rather than failing the wait
    WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException,)).until(test)


def click_css(driver: Any, css: str) -> None:
    """Clicks the first element ``css`` selects, looked up afresh until the click lands: the run
    list re-renders its rows on every poll, so a row found a moment before may be gone by the
    click (a stale element), and the next lookup finds its replacement."""
    from selenium.webdriver.common.by import By

    def clicked(d: Any) -> bool:
        found = d.find_elements(By.CSS_SELECTOR, css)
        if found:
            found[0].click()
        return bool(found)

    wait_until(driver, clicked)


def console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
