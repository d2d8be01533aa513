"""A run folder that holds as much as a run can, or more: what ``srez view`` must open without
stalling anyone else (docs/view.md, "Limits").

:func:`heavy_run` starts from a real finished run and fills it: Markdown notes of about 900 KB
each (the daemon takes notes up to 64 MiB in all), an agent log of escape bytes (an agent's
stdout), a patch of many small files, and many more short dialog entries. :func:`heavy_figures`
serves a folder with such a run by the real ``srez view`` command, in a process of its own, and
measures what everyone else sees while one client opens the heavy run again and again (its
page, its dialog's earlier pages, its log): the other clients' latency on the runs list (median
and p90) and the server's peak memory (``VmHWM``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final, NamedTuple

import aiohttp
import orjson

TARGET_MEDIAN_MS: Final = 50.0
TARGET_MEMORY_MB: Final = 300.0


class Heavy(NamedTuple):
    """How much a heavy run holds."""

    notes: int = 6
    note_bytes: int = 900_000
    log_bytes: int = 24 << 20
    patch_files: int = 200_000
    dialog_entries: int = 1_000_000


def heavy_run(root: Path, size: Heavy | None = None) -> str:
    """A real inline run of ``sre-001`` under ``root``, filled to ``size`` (default
    :class:`Heavy`'s); its run id."""
    size = size or Heavy()
    from srez_client.backends.inline.host import run_inline
    from srez_daemon.protocol import Assistant, ToolCall, ToolResult, encode_entry
    from srez_env.tasks import load_tasks

    (task,) = load_tasks(["sre-001"])
    run_id = run_inline(task, "scripted", 0, root).run_id
    (folder,) = [p for p in root.rglob(run_id) if p.is_dir()]
    ts = "2026-01-01T00:00:00Z"
    paragraph = (
        "## Findings\n\n" + "* the **pool** is `exhausted` on db, see [log](http://x)\n" * 20
    )
    note = (paragraph * (size.note_bytes // len(paragraph) + 1))[: size.note_bytes]
    with (folder / "archive" / "dialog.jsonl").open("ab") as out:
        seq = 10_000
        for _ in range(size.notes):
            out.write(encode_entry(Assistant(seq=seq, ts=ts, text=note)))
            seq += 1
        batch = []
        for i in range(size.dialog_entries // 2):
            batch.append(
                encode_entry(ToolCall(seq=seq, ts=ts, call_id=f"h{i}", name="get_status", args={}))
            )
            batch.append(encode_entry(ToolResult(seq=seq + 1, ts=ts, call_id=f"h{i}", status="success", result="ok", duration_ms=1.0, step=1, steps_left=1)))  # fmt: skip
            seq += 2
            if len(batch) >= 10_000:
                out.write(b"".join(batch))
                batch.clear()
        out.write(b"".join(batch))
    (folder / "logs").mkdir(exist_ok=True)
    escapes = b"\x1b[2J\x1b]0;x\x07\n"  # clear the screen, set the title, ring the bell
    (folder / "logs" / "agent.log").write_bytes(escapes * (size.log_bytes // len(escapes)))
    hunks = "".join(
        f"--- a/f{i}\n+++ b/f{i}\n@@ -1 +1 @@\n-a\n+b\n" for i in range(size.patch_files)
    )
    (folder / "final.patch").write_text(hunks)
    return run_id


async def _timed(session: aiohttp.ClientSession, path: str) -> float:
    started = time.perf_counter()
    async with session.get(path) as r:
        assert r.status == 200, (path, r.status)
        await r.read()
    return time.perf_counter() - started


async def _measure(base: str, token: str, heavy_id: str, rounds: int) -> dict[str, Any]:
    async with aiohttp.ClientSession(base_url=base, headers={"Origin": base}) as s:
        async with s.post("/api/session", json={"token": token}) as r:
            s.headers["Authorization"] = f"Bearer {(await r.json())['secret']}"
        heavy_paths = [
            f"/api/runs/{heavy_id}",
            f"/api/runs/{heavy_id}/logs/agent",
            f"/api/runs/{heavy_id}/dialog?before=500",
        ]
        others: list[float] = []
        heavy: list[float] = []

        async def opener() -> None:  # the first open builds the page: the others' worst time
            for i in range(rounds):
                heavy.append(await _timed(s, heavy_paths[i % len(heavy_paths)]))

        async def other() -> None:
            while len(heavy) < rounds:
                others.append(await _timed(s, "/api/runs"))
                await asyncio.sleep(0.01)

        await asyncio.gather(opener(), other())
    ordered = sorted(others)
    return {
        "first_open_s": round(heavy[0], 2),
        "others_requests": len(others),
        "others_median_ms": round(statistics.median(ordered) * 1000, 1),
        "others_p90_ms": round(ordered[int(len(ordered) * 0.9)] * 1000, 1),
        "heavy_median_ms": round(statistics.median(heavy) * 1000, 1),
    }


def _peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def heavy_figures(size: Heavy | None = None, rounds: int = 30) -> dict[str, Any]:
    """The figures of the module docstring, for one run of ``size`` (default :class:`Heavy`'s)."""
    size = size or Heavy()
    with tempfile.TemporaryDirectory(prefix="srez-bench-heavy-") as tmp:
        root = Path(tmp) / "results"
        heavy_id = heavy_run(root, size)
        proc = subprocess.Popen(
            [sys.executable, "-m", "srez_client.cli", "view", "--hosted", "--results", str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "SREZ_STATE": str(Path(tmp) / "state")},
        )
        try:
            assert proc.stdout is not None
            address = proc.stdout.readline().split(": ", 1)[1].strip()
            base, token = address.split("/?token=")
            figures = asyncio.run(_measure(base, token, heavy_id, rounds))
            figures["server_peak_mb"] = _peak_mb(proc.pid)
        finally:
            proc.terminate()
            proc.communicate(timeout=10)  # reaped, its pipe closed
    figures["target_median_ms"] = TARGET_MEDIAN_MS
    figures["median_vs_target"] = round(figures["others_median_ms"] / TARGET_MEDIAN_MS, 3)
    figures["target_memory_mb"] = TARGET_MEMORY_MB
    figures["memory_vs_target"] = round(figures["server_peak_mb"] / TARGET_MEMORY_MB, 3)
    figures["run"] = orjson.loads(orjson.dumps(size._asdict()))
    return figures


if __name__ == "__main__":
    print(orjson.dumps(heavy_figures(), option=orjson.OPT_INDENT_2).decode())
