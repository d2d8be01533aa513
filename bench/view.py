"""``srez view``: the runs list of a big results folder, served through real loopback HTTP.

* ``list``: ``GET /api/runs`` (the first page, newest first, with the tab counts and
  filter menus) over 10,000 finished runs, the median and p90 of 20 requests, against the
  300 ms target; ``filtered`` the same with a task, an agent and a text filter;
* ``index``: the first listing of the folder (every ``summary.json`` read) and a refresh that
  finds nothing new (only the folders listed again), which the server does at most every 2 s;
* ``live_entry``: a live dialog entry from the moment the server's run source hands it over to
  the moment it is in the page's DOM (Debian's chromium, headless; a MutationObserver reads the
  time each entry carries), median and p99 of 200 entries 20 ms apart, against 50 ms. The source
  stands in for the run's daemon: what the daemon's own stream adds is ``make bench``'s ``tui``
  figure (its tail to a client).

The folder is made here: 10,000 run folders of 40 tasks × 5 agents × 50 runs, each with the
``summary.json`` a run writes (the list reads nothing else).
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import aiohttp
import orjson
from aiohttp.test_utils import TestServer

from srez_client.web.app import make_app
from srez_client.web.security import allowed_hosts
from srez_client.web.state import ViewServer

RUNS: Final = 10_000
TARGET_MS: Final = 300.0
AGENTS: Final = ("scripted", "heuristic", "random", "noop", "llm")


def make_results(root: Path, runs: int = RUNS) -> None:
    """``runs`` finished runs' summaries under ``root``."""
    for i in range(runs):
        task, agent = f"sre-{i % 40 + 1:03d}", AGENTS[i // 40 % len(AGENTS)]
        run_id = f"20260{i // 2000 + 1}01T{i % 24:02d}{i % 60:02d}00Z-{i:08x}"
        folder = root / task / "none" / agent / run_id
        folder.mkdir(parents=True)
        summary = {
            "run_id": run_id, "task_id": task, "agent": agent, "model": "none",
            "status": "ok" if i % 7 else "error", "reward": (i % 100) / 100,
            "resolved": i % 3 == 0, "passed": i % 5 == 0, "steps": i % 40,
            "finished_at": f"2026-01-01T00:00:{i % 60:02d}.{i:06d}Z",
        }  # fmt: skip
        (folder / "summary.json").write_bytes(orjson.dumps(summary))


def _ms(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 1),
        "p90_ms": round(ordered[int(len(ordered) * 0.9)] * 1000, 1),
    }


async def _requests(
    base: str, token: str, params: dict[str, str], runs: int, n: int = 20
) -> list[float]:
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(base_url=base, cookie_jar=jar) as s:
        await (await s.get(f"/?token={token}")).release()
        times = []
        for _ in range(n):
            started = time.perf_counter()
            async with s.get("/api/runs", params=params) as r:
                assert r.status == 200, await r.text()
                body = await r.json()
            times.append(time.perf_counter() - started)
        assert body["counts"]["all"] == runs
        return times


async def _figures(root: Path, runs: int) -> dict[str, Any]:
    view = ViewServer(root, hosted=True)
    started = time.perf_counter()
    await view.refresh(force=True)
    first = time.perf_counter() - started
    started = time.perf_counter()
    await view.refresh(force=True)
    again = time.perf_counter() - started
    server = TestServer(make_app(view), host="127.0.0.1")
    await server.start_server()
    try:
        assert server.port is not None
        view.gate.hosts = allowed_hosts("127.0.0.1", server.port)
        base = f"http://127.0.0.1:{server.port}"
        plain = _ms(await _requests(base, view.gate.token, {}, runs))
        wanted = {"task": "sre-007", "agent": "random", "q": "0"}
        filtered = _ms(await _requests(base, view.gate.token, wanted, runs))
    finally:
        await server.close()
    return {
        "runs": runs,
        "list": {**plain, "vs_target": round(plain["p90_ms"] / TARGET_MS, 3)},
        "filtered": filtered,
        "index": {"first_s": round(first, 2), "refresh_s": round(again, 2)},
    }


def view_figures(runs: int = RUNS, *, live: bool = True) -> dict[str, Any]:
    """Every figure of this section (over ``runs`` runs; ``live``: with the browser's)."""
    with tempfile.TemporaryDirectory(prefix="srez-bench-view-") as tmp:
        make_results(Path(tmp), runs)
        figures = asyncio.run(_figures(Path(tmp), runs))
        if live:
            missing = [n for n in ("chromium", "chromedriver") if shutil.which(n) is None]
            figures["live_entry"] = (
                {"skipped": f"{' and '.join(missing)} not installed"}
                if missing
                else asyncio.run(_live_latency(Path(tmp)))
            )
        return figures


# ---------------------------------------------------------------------- live entry latency

ENTRIES: Final = 200
"""Live entries timed, one every :data:`GAP_S`."""
GAP_S: Final = 0.02
LIVE_TARGET_MS: Final = 50.0


class _TimedSource:
    """A live run whose entries each carry the wall time (ms) they were handed to the server."""

    live = True
    run_id = "20260101T000000Z-0000feed"

    async def connect(self, status: Any = None) -> None:
        """Nothing to connect to."""

    async def meta(self) -> Any:
        from srez_client.tui.source import RunMeta

        return RunMeta(run_id=self.run_id, task_id="sre-001", phase="agent", agent="bench")

    async def events(self) -> Any:
        from srez_client.tui.source import DialogBatch
        from srez_daemon.protocol import Assistant, SessionStarted

        ts = "2026-01-01T00:00:00Z"
        start = SessionStarted(
            seq=0, ts=ts, agent="bench", model="none", task_id="sre-001", run_id=self.run_id
        )
        yield DialogBatch([start])
        await asyncio.sleep(1.0)  # the page is drawn
        for seq in range(1, ENTRIES + 1):
            sent = time.time() * 1000  # the browser's clock is the same wall clock  # noqa: TID251
            yield DialogBatch([Assistant(seq=seq, ts=ts, text=f"{sent:.3f}")])
            await asyncio.sleep(GAP_S)
        await asyncio.sleep(3600)  # stays live until the page is closed

    async def diff(self) -> str:
        return ""

    async def reference(self) -> Any:
        from srez_client.tui.source import SourceUnavailable

        msg = "live"
        raise SourceUnavailable(msg)

    async def grade(self) -> Any:
        from srez_client.tui.source import SourceUnavailable

        msg = "live"
        raise SourceUnavailable(msg)

    summary = grade

    def log_names(self) -> list[str]:
        return []

    async def close(self) -> None:
        """Nothing to close."""


class _OneLiveRun:
    def __init__(self) -> None:
        self.source_ = _TimedSource()

    async def rows(self) -> list[Any]:
        return []

    def source(self, run_id: str) -> Any:
        return self.source_ if run_id == self.source_.run_id else None

    async def act(self, run_id: str, action: str) -> str:
        return "not here"

    async def close(self) -> None:
        """Nothing to close."""


OBSERVER: Final = """
window.__lat = [];
new MutationObserver((records) => {
  const now = Date.now();
  for (const r of records) for (const n of r.addedNodes) {
    if (n.dataset && n.dataset.kind === "assistant") window.__lat.push(now - parseFloat(n.textContent.replace(/^Assistant/, "")));
  }
}).observe(document.getElementById("dialog"), {childList: true});
"""


async def _live_latency(root: Path) -> dict[str, Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    view = ViewServer(root, live=_OneLiveRun())
    server = TestServer(make_app(view), host="127.0.0.1")
    await server.start_server()
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = await asyncio.to_thread(
        webdriver.Chrome, service=Service("/usr/bin/chromedriver"), options=options
    )
    try:
        assert server.port is not None
        view.gate.hosts = allowed_hosts("127.0.0.1", server.port)
        base = f"http://127.0.0.1:{server.port}"
        await asyncio.to_thread(driver.get, f"{base}/?token={view.gate.token}")
        await asyncio.to_thread(driver.get, f"{base}/#/run/{_TimedSource.run_id}")
        wait = WebDriverWait(driver, 30)
        await asyncio.to_thread(
            wait.until, lambda d: d.find_elements(By.CSS_SELECTOR, "#dialog .item")
        )
        await asyncio.to_thread(driver.execute_script, OBSERVER)
        await asyncio.to_thread(
            wait.until, lambda d: d.execute_script("return window.__lat.length") >= ENTRIES - 5
        )
        latencies = await asyncio.to_thread(driver.execute_script, "return window.__lat")
    finally:
        await asyncio.to_thread(driver.quit)
        await server.close()
    ordered = sorted(float(x) for x in latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "entries": len(ordered),
        "median_ms": round(statistics.median(ordered), 1),
        "p99_ms": round(p99, 1),
        "vs_target": round(p99 / LIVE_TARGET_MS, 3),
    }
