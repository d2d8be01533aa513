"""``srez view``: the runs list of a big results folder, and a live entry from a run's daemon to
a browser's DOM, served through real loopback HTTP.

* ``list``: ``GET /api/runs`` (the first page, newest first, with the tab counts and
  filter menus) over 10,000 finished runs, the median and p90 of 20 requests, against the
  300 ms target; ``filtered`` the same with a task, an agent and a text filter;
* ``index``: the first listing of the folder (every ``summary.json`` read) and a refresh that
  finds nothing new (only the folders listed again), which the server does at most every 2 s;
* ``live_entry``: end to end, a live run of the ``local`` backend (its real daemon, launched by
  ``srez run``), the view server relaying the daemon's stream over its own WebSocket, and
  Debian's chromium (headless, driven by Selenium) showing the run. Entries are appended to the
  run's ``dialog.jsonl`` as the daemon's ``DialogWriter`` appends them (one ``O_APPEND`` write,
  then fsync), one every 20 ms; the bench notes the wall time just before each write, and the
  page notes, in a MutationObserver, the wall time each entry's node joins the DOM
  (``performance.timeOrigin + performance.now()``, set on the bench's wall clock by the offset
  of the fastest of 30 round trips that read the page's clock). Median and p99 of
  200 entries, against 50 ms. Without chromium the figure says why it was not measured
  (``"measured": false``).
* ``live_entry_from_source``: the same page with the view server's run source handing it the
  entries (no daemon): what the view server and the browser add on their own.
* ``heavy_run``: one run holding as much as a run can (:mod:`bench.view_heavy`), opened again
  and again by one client while another reads the runs list: the other's median and p90
  against 50 ms, and the server's peak memory against 300 MB.

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

from bench.view_heavy import Heavy, heavy_figures
from bench.view_live import daemon_latency, source_latency
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
    base: str, secret: str, params: dict[str, str], runs: int, n: int = 20
) -> list[float]:
    """``n`` requests of the runs list, each timed, by a client signed in as the page is."""
    headers = {"Authorization": f"Bearer {secret}"}
    async with aiohttp.ClientSession(base_url=base, headers=headers) as s:
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
        secret = view.gate.trade(view.gate.token)  # what the page's POST /api/session does
        assert secret is not None
        plain = _ms(await _requests(base, secret, {}, runs))
        wanted = {"task": "sre-007", "agent": "random", "q": "0"}
        filtered = _ms(await _requests(base, secret, wanted, runs))
    finally:
        await server.close()
    return {
        "runs": runs,
        "list": {**plain, "vs_target": round(plain["p90_ms"] / TARGET_MS, 3)},
        "filtered": filtered,
        "index": {"first_s": round(first, 2), "refresh_s": round(again, 2)},
    }


def view_figures(
    runs: int = RUNS, *, live: bool = True, heavy: Heavy | None = None
) -> dict[str, Any]:
    """Every figure of this section (over ``runs`` runs; ``live``: with the browser's; ``heavy``:
    the heavy run's size, default :class:`~bench.view_heavy.Heavy`'s)."""
    with tempfile.TemporaryDirectory(prefix="srez-bench-view-") as tmp:
        make_results(Path(tmp), runs)
        figures = asyncio.run(_figures(Path(tmp), runs))
        figures["heavy_run"] = heavy_figures(heavy)
        if live:
            missing = missing_browser()
            if missing:
                why = {"measured": False, "why": missing}
                figures["live_entry"] = figures["live_entry_from_source"] = why
            else:
                figures["live_entry"] = asyncio.run(daemon_latency())
                figures["live_entry_from_source"] = asyncio.run(source_latency(Path(tmp)))
        return figures


def missing_browser() -> str:
    """Why the browser's figures cannot be measured here ("" when they can)."""
    missing = [n for n in ("chromium", "chromedriver") if shutil.which(n) is None]
    if not missing:
        return ""
    return (
        f"{' and '.join(missing)} not installed (Debian: apt-get install chromium chromium-driver)"
    )
