"""``srez view``'s live figures (:mod:`bench.view`): a dialog entry's way into a browser's DOM.

* :func:`daemon_latency`: from a real run daemon. ``srez run`` launches a ``local`` run whose
  agent only waits; the bench appends entries to the run's ``archive/dialog.jsonl`` as the
  daemon's ``DialogWriter`` does (one ``O_APPEND`` write, then fsync, from a worker thread), noting
  the wall time just before each write. The daemon's tail streams them over its WebSocket, the
  view server relays them over the page's, and headless chromium adds them to the DOM, where a
  MutationObserver notes the wall time each entry's node arrives (one machine, one clock).
* :func:`source_latency`: the view server's run source hands the entries over (no daemon), each
  carrying the wall time it was handed over: the view server's and the browser's part alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

from aiohttp.test_utils import TestServer

from srez_client.web.app import make_app
from srez_client.web.security import allowed_hosts
from srez_client.web.state import LiveRuns, ViewServer
from srez_core.clock import system_clock, utc_timestamp
from srez_daemon.protocol import Assistant, encode_entry

ENTRIES: Final = 200
"""Live entries timed, one every :data:`GAP_S`."""
GAP_S: Final = 0.02
LIVE_TARGET_MS: Final = 50.0
RUN_START_S: Final = 60.0
"""How long the run may take to be listed live with its prompt written."""
WAITER: Final = (
    "import time\ntime.sleep(600)  # the bench's entries are the dialog; it stops the run\n"
)

OBSERVER: Final = """
window.__arrived = {};
new MutationObserver((records) => {
  const now = performance.timeOrigin + performance.now();
  for (const r of records) for (const n of r.addedNodes) {
    const seq = n.dataset && n.dataset.seq;
    if (seq !== undefined && !(seq in window.__arrived)) window.__arrived[seq] = now;
  }
}).observe(document.getElementById("dialog"), {childList: true});
"""
"""Notes when each dialog item (by ``seq``) first joins the DOM, in the page's milliseconds
(:func:`_clock_offset` sets them on this process's wall clock)."""


async def _clock_offset(driver: Any, samples: int = 30) -> float:
    """The page's clock minus this process's wall clock, in ms, from the round trip with the
    smallest time (the page's reading lies within it; the error is at most half of it).

    The two clocks are not assumed equal: the page's ``timeOrigin`` sat 5 to 12 ms off the wall
    clock on a loaded machine, which gave negative latencies."""
    best: tuple[float, float] | None = None
    for _ in range(samples):
        before = time.time() * 1000  # noqa: TID251  # the wall clock the entries are stamped on
        page = await asyncio.to_thread(
            driver.execute_script, "return performance.timeOrigin + performance.now()"
        )
        after = time.time() * 1000  # noqa: TID251
        if best is None or after - before < best[0]:
            best = (after - before, float(page) - (before + after) / 2)
    assert best is not None
    return best[1]


def _stats(latencies: list[float], **extra: Any) -> dict[str, Any]:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "measured": True,
        "entries": len(ordered),
        "median_ms": round(statistics.median(ordered), 1),
        "p99_ms": round(p99, 1),
        "max_ms": round(ordered[-1], 1),
        "target_p99_ms": LIVE_TARGET_MS,
        "vs_target": round(p99 / LIVE_TARGET_MS, 3),
        **extra,
    }


@contextlib.asynccontextmanager
async def _page(view: ViewServer, run_id: str) -> AsyncIterator[Any]:
    """Headless chromium showing ``run_id`` on a view server on loopback; yields the driver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

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
        wait = WebDriverWait(driver, 30)
        signed_in = "return localStorage.getItem('srez-view-secret')"  # the page traded the token
        await asyncio.to_thread(wait.until, lambda d: d.execute_script(signed_in))
        await asyncio.to_thread(driver.get, f"{base}/#/run/{run_id}")
        await asyncio.to_thread(
            wait.until, lambda d: d.find_elements(By.CSS_SELECTOR, "#dialog .item")
        )
        await asyncio.to_thread(driver.execute_script, OBSERVER)
        yield driver
    finally:
        await asyncio.to_thread(driver.quit)
        await server.close()


async def _arrivals(driver: Any, count: int, limit_s: float = 30.0) -> dict[int, float]:
    """The page's arrival times by ``seq`` once ``count`` entries arrived (or at ``limit_s``)."""
    deadline = time.monotonic() + limit_s
    while True:
        seen = await asyncio.to_thread(driver.execute_script, "return window.__arrived")
        if len(seen) >= count or time.monotonic() > deadline:
            return {int(k): float(v) for k, v in seen.items()}
        await asyncio.sleep(0.2)


# ---------------------------------------------------------------------- from a real daemon


class _Writer:
    """Appends entries to a dialog file as ``DialogWriter`` does, noting each write's wall time."""

    def __init__(self, path: Path, first_seq: int) -> None:
        self._path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self.seq = first_seq
        self.written: dict[int, float] = {}

    def _write(self) -> None:
        # the next seq after every line in the file: the daemon may have written an entry of
        # its own meanwhile (a colliding seq would be timed by the daemon's entry)
        seq = self.seq = max(self.seq, self._path.read_bytes().count(b"\n"))
        self.seq += 1
        ts = utc_timestamp(system_clock())
        data = encode_entry(Assistant(seq=seq, ts=ts, text=f"bench entry {seq}: checking **logs**"))
        self.written[seq] = time.time() * 1000  # noqa: TID251  # the entries' wall clock
        os.write(self._fd, data)
        os.fsync(self._fd)

    async def append(self) -> None:
        await asyncio.to_thread(self._write)

    def close(self) -> None:
        os.close(self._fd)


async def _live_run(live: LiveRuns, state: Path) -> tuple[str, Path, int]:
    """The run once listed live with its prompt written: its id, dialog file and next ``seq``."""
    deadline = time.monotonic() + RUN_START_S
    while time.monotonic() < deadline:
        running = [r for r in await live.rows() if r.state == "running"]
        if running:
            run_id = running[0].run_id
            dialog = state / "live" / run_id / "run" / "archive" / "dialog.jsonl"
            with contextlib.suppress(FileNotFoundError):
                lines = dialog.read_bytes().splitlines()
                if len(lines) >= 2:  # session started, task prompt
                    return run_id, dialog, len(lines)
        await asyncio.sleep(0.1)
    msg = f"no live local run with its prompt written within {RUN_START_S:g} s"
    raise TimeoutError(msg)


def _launch(root: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    (root / "waiter.py").write_text(WAITER)
    argv = [
        sys.executable, "-m", "srez_client.cli", "run", "--backend", "local", "--task", "sre-001",
        "--agent", "cmd:bench-waiter", "--agent-cmd", f"{sys.executable} {root / 'waiter.py'}",
        "--results", str(root / "results"),
    ]  # fmt: skip
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root
    )


async def daemon_latency() -> dict[str, Any]:
    """A live entry from a real run daemon into the page's DOM, through the view server."""
    from srez_client.web.live import BackendLiveRuns

    with tempfile.TemporaryDirectory(prefix="srez-bench-view-live-") as tmp:
        root = Path(tmp)
        (root / "results").mkdir()
        env = {**os.environ, "SREZ_STATE": str(root / "state")}
        run = _launch(root, env)
        live = BackendLiveRuns.from_env(env, backend="local", results=root / "results")
        run_id = ""
        try:
            run_id, dialog, first_seq = await _live_run(live, root / "state")
            view = ViewServer(root / "results", live=live)
            async with _page(view, run_id) as driver:
                writer = _Writer(dialog, first_seq)
                try:
                    for _ in range(ENTRIES):
                        await writer.append()
                        await asyncio.sleep(GAP_S)
                finally:
                    writer.close()
                arrived = await _arrivals(driver, first_seq + ENTRIES)
                offset = await _clock_offset(driver)
        finally:
            if run_id:
                with contextlib.suppress(Exception):
                    await live.act(run_id, "stop")
            try:
                await asyncio.to_thread(run.communicate, timeout=60)
            except subprocess.TimeoutExpired:
                run.kill()
                await asyncio.to_thread(run.communicate)
    latencies = [arrived[s] - offset - t for s, t in writer.written.items() if s in arrived]
    return _stats(
        latencies,
        path="daemon dialog.jsonl → daemon WebSocket → view server → page WebSocket → DOM",
        lost=ENTRIES - len(latencies),
    )


# ---------------------------------------------------------------------- from the view's source


class _TimedSource:
    """A live run whose entries are handed to the view server one every :data:`GAP_S`, each
    noting the wall time (ms) it was handed over."""

    live = True
    run_id = "20260101T000000Z-0000feed"

    def __init__(self) -> None:
        self.sent: dict[int, float] = {}

    async def connect(self, status: Any = None) -> None:
        """Nothing to connect to."""

    async def meta(self) -> Any:
        from srez_client.tui.source import RunMeta

        return RunMeta(run_id=self.run_id, task_id="sre-001", phase="agent", agent="bench")

    async def events(self) -> Any:
        from srez_client.tui.source import DialogBatch
        from srez_daemon.protocol import SessionStarted

        ts = "2026-01-01T00:00:00Z"
        start = SessionStarted(
            seq=0, ts=ts, agent="bench", model="none", task_id="sre-001", run_id=self.run_id
        )
        yield DialogBatch([start])
        await asyncio.sleep(1.0)  # the page is drawn and observed
        for seq in range(1, ENTRIES + 1):
            self.sent[seq] = time.time() * 1000  # noqa: TID251  # the page's clock is the wall clock
            yield DialogBatch([Assistant(seq=seq, ts=ts, text=f"bench entry {seq}")])
            await asyncio.sleep(GAP_S)
        await asyncio.sleep(3600)  # stays live until the page is closed

    async def diff(self) -> str:
        return ""

    async def diff_head(self, most: int) -> tuple[str, int]:
        return "", 0

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


async def source_latency(root: Path) -> dict[str, Any]:
    """A live entry from the view server's run source into the page's DOM (no daemon)."""
    live = _OneLiveRun()
    view = ViewServer(root, live=live)
    async with _page(view, _TimedSource.run_id) as driver:
        arrived = await _arrivals(driver, ENTRIES + 1, limit_s=30.0 + ENTRIES * GAP_S)
        offset = await _clock_offset(driver)
    sent = live.source_.sent
    latencies = [arrived[s] - offset - t for s, t in sent.items() if s in arrived]
    return _stats(
        latencies,
        path="view server's run source → page WebSocket → DOM (no daemon)",
        lost=ENTRIES - len(latencies),
    )
