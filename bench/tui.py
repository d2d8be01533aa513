"""TUI figures for ``make bench`` (:func:`bench_tui`), measured headless (no terminal).

* Opening a finished run of 10,000 dialog entries in the viewer (read, parse, fold, first
  render of the whole screen) against reading and parsing the file alone, as a ratio: the
  viewer's own cost on top of the unavoidable parse.
* Key press to redrawn screen in the viewer while 50 entries/s arrive from a live source:
  p50/p99 of ``keypress`` plus a full render of a 120x40 screen.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final

from srez_client.tui.app import TuiApp
from srez_client.tui.source import DialogBatch, RunMeta, RunSource, SourceEvent, SourceUnavailable
from srez_client.tui.source_results import FinishedRunSource
from srez_daemon.protocol import (
    Assistant,
    DialogEntry,
    SessionCompleted,
    SessionStarted,
    ToolCall,
    ToolResult,
    encode_entry,
    iter_dialog,
)

ENTRIES: Final = 10_000
RATE: Final = 50.0
SIZE: Final = (120, 40)
TS: Final = "2026-01-01T00:00:00Z"


def _entries(n: int) -> list[DialogEntry]:
    out: list[DialogEntry] = [
        SessionStarted(seq=0, ts=TS, agent="llm", model="bench", task_id="sre-001", run_id="r")
    ]
    seq = 1
    while seq < n - 1:
        if seq % 3 == 1:
            out.append(Assistant(seq=seq, ts=TS, text=f"Step {seq}: check **logs** of `payments`"))
        elif seq % 3 == 2:
            out.append(
                ToolCall(
                    seq=seq, ts=TS, call_id=f"c{seq}", name="get_logs", args={"service": "payments"}
                )
            )
        else:
            result = "2025-03-14T09:55:05Z payments ERROR dial tcp: refused\n" * 8
            out.append(
                ToolResult(
                    seq=seq,
                    ts=TS,
                    call_id=f"c{seq - 1}",
                    status="success",
                    result=result,
                    duration_ms=1,
                    step=seq,
                    steps_left=1,
                )
            )
        seq += 1
    out.append(SessionCompleted(seq=seq, ts=TS, turns=seq // 3, duration_s=1.0))
    return out


def _write_run(root: Path, n: int) -> Path:
    folder = root / "sre-001" / "bench" / "llm" / "20260101T000000Z-00000000"
    (folder / "archive").mkdir(parents=True)
    (folder / "archive" / "dialog.jsonl").write_bytes(
        b"".join(encode_entry(e) for e in _entries(n))
    )
    (folder / "final.patch").write_text("")
    (folder / "summary.json").write_text("{}")
    return folder


async def _until(check: Callable[[], bool], limit_s: float = 60.0) -> None:
    async with asyncio.timeout(limit_s):
        while not check():  # noqa: ASYNC110 - polling a plain predicate, nothing to wait on
            await asyncio.sleep(0.001)


async def _open_seconds(folder: Path, root: Path) -> float:
    app = TuiApp(results_root=root, state_dir=root / "state")
    start = time.perf_counter()
    app.attach(FinishedRunSource(folder))
    host = app.host
    assert host is not None
    fold = host.viewers[0].feed.models.fold
    await _until(lambda: fold.ended)
    app.screen_text(SIZE)
    elapsed = time.perf_counter() - start
    await host.viewers[0].close()
    return elapsed


def _parse_seconds(folder: Path) -> float:
    start = time.perf_counter()
    data = (folder / "archive" / "dialog.jsonl").read_bytes()
    list(iter_dialog(data))
    return time.perf_counter() - start


class _Trickle(RunSource):
    """A live source that yields entries at a fixed rate."""

    live = True

    def __init__(self, entries: list[DialogEntry], rate: float) -> None:
        self.run_id = "bench"
        self.entries = entries
        self.rate = rate

    async def meta(self) -> RunMeta:
        return RunMeta(run_id="bench", task_id="sre-001", model="bench", agent="llm", phase="agent")

    async def events(self) -> AsyncIterator[SourceEvent]:
        for entry in self.entries:
            await asyncio.sleep(1 / self.rate)
            yield DialogBatch([entry])

    async def diff(self) -> str:
        return ""

    async def reference(self) -> tuple[str, float | None]:
        msg = "agent phase"
        raise SourceUnavailable(msg)

    async def grade(self) -> dict[str, Any]:
        msg = "not graded"
        raise SourceUnavailable(msg)

    async def summary(self) -> dict[str, Any]:
        msg = "running"
        raise SourceUnavailable(msg)

    def log_names(self) -> list[str]:
        return []

    async def logs(self, name: str, *, follow: bool) -> AsyncIterator[str]:
        empty: tuple[str, ...] = ()
        for chunk in empty:
            yield chunk

    async def dialog_bytes(self) -> bytes:
        return b""


async def _key_latencies(seconds: float) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        app = TuiApp(results_root=Path(tmp), state_dir=Path(tmp) / "state")
        app.attach(_Trickle(_entries(int(RATE * seconds) + 10), RATE))
        keys = ["up", "down", "enter", "1", "3", "2", "[", "[", "page up", "page down"]
        out: list[float] = []
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        i = 0
        while loop.time() < end:
            await asyncio.sleep(0.02)
            start = time.perf_counter()
            app.feed_keys([keys[i % len(keys)]], SIZE)
            app.screen_text(SIZE)
            out.append(time.perf_counter() - start)
            i += 1
        assert app.host is not None
        await app.host.viewers[0].close()
        return out


async def _bench(seconds: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = _write_run(root, ENTRIES)
        parse = min(_parse_seconds(folder) for _ in range(3))
        opened = min([await _open_seconds(folder, root) for _ in range(3)])
    latencies = sorted(await _key_latencies(seconds))
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return {
        "tui_open_10k_s": round(opened, 4),
        "tui_parse_10k_s": round(parse, 4),
        "tui_open_vs_parse_ratio": round(opened / parse, 2),
        "tui_key_redraw_p50_ms": round(statistics.median(latencies) * 1000, 2),
        "tui_key_redraw_p99_ms": round(p99 * 1000, 2),
        "tui_key_samples": float(len(latencies)),
    }


def bench_tui(seconds: float = 3.0) -> dict[str, float]:
    """The TUI's figures (see the module docstring).

    ``make bench`` runs every figure in one process: the objects the earlier ones left behind
    are frozen first, so a full collection of their heap (measured: 280 ms once) is not counted
    as the viewer's redraw.
    """
    gc.collect()
    gc.freeze()
    try:
        return asyncio.run(_bench(seconds))
    finally:
        gc.unfreeze()


if __name__ == "__main__":
    print(bench_tui())
