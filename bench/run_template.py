"""The warm run template against the fresh start (docs/backends.md, ``local``): what starting a
run's daemon costs each way, in one run, alternating.

For each path (``template``: a fork of the backend's warm template; ``fresh``: ``python -m
srez_daemon``), rounds of :data:`RUNS` ``local`` runs (``heuristic`` on sre-001, ``keep`` so the
daemon stays to be measured, the default sandbox) are launched one after the other, the paths
alternating round by round:

* ``cpu_s_per_start``: the daemon's own CPU time (user + system, ``/proc``) once the launch
  returned, that is once ``/api/health`` said the run had left ``starting`` (the task loaded, the
  episode reset, the agent started): the median over the runs. A fork counts from the fork: what
  the template paid for its imports is ``template.cpu_s``, once per launcher;
* ``launch_to_ready_p50_s``: the launch call's wall time;
* ``idle_rss_mb`` and ``idle_pss_mb``: a daemon idling after its run finished (median); PSS
  shares the pages a fork shares with its template and its siblings among them, RSS counts them
  whole in each;
* ``template``: the template's own RSS, PSS and CPU time, with the round's daemons alive.

Every run is checked: the launch returned (its health answered 200 past ``starting``) and its
``summary.json`` says ``ok``; a figure is reported only from runs that passed (``runs_ok``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any, Final

import psutil

from srez_client.backends.base import LaunchSpec, RunHandle
from srez_client.backends.local.backend import LocalBackend

RUNS: Final = 5
"""Runs per round and path."""
ROUNDS: Final = 2
TARGET_CPU_S: Final = 0.05
"""CPU-seconds per run start with the template (issue 30)."""
TARGET_IDLE_RSS_MB: Final = 48.0
"""Idle RSS of one daemon (docs/design.md §13)."""


def _mb(value: int) -> float:
    return value / (1 << 20)


def _cpu_s(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


async def _round(backend: LocalBackend, results: Path) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"cpu": [], "ready": [], "rss": [], "pss": []}
    handles: list[RunHandle] = []
    loop = asyncio.get_running_loop()
    try:
        for _ in range(RUNS):
            spec = LaunchSpec(
                task_id="sre-001", agent_spec="heuristic", keep=True, results_root=results
            )
            started = loop.time()
            handle = await backend.launch(spec)
            ready = loop.time() - started
            handles.append(handle)
            record = backend._record(handle.run_id)
            if record is None or record.pid is None:
                continue
            cpu = _cpu_s(record.pid)
            done = await backend.wait(handle, timeout_s=60)
            summary = backend.live / handle.run_id / "run" / "summary.json"
            if not done.finished or json.loads(summary.read_text()).get("status") != "ok":
                continue  # a figure only from a run that completed
            samples["cpu"].append(cpu)
            samples["ready"].append(ready)
        await asyncio.sleep(0.5)  # every daemon idle
        for handle in handles:
            record = backend._record(handle.run_id)
            if record is None or record.pid is None:
                continue
            info = psutil.Process(record.pid).memory_full_info()
            samples["rss"].append(_mb(info.rss))
            samples["pss"].append(_mb(info.pss))
        template = backend._template
        if template is not None and template.pid is not None:
            info = psutil.Process(template.pid).memory_full_info()
            samples.setdefault("template_rss", []).append(_mb(info.rss))
            samples.setdefault("template_pss", []).append(_mb(info.pss))
            samples.setdefault("template_cpu", []).append(_cpu_s(template.pid))
    finally:
        await asyncio.gather(*(backend.remove(h) for h in handles), return_exceptions=True)
    return samples


def _median(values: list[float], digits: int = 3) -> float | None:
    return round(statistics.median(values), digits) if values else None


async def template_figures() -> dict[str, Any]:
    """Both paths side by side (see the module docs)."""
    root = Path(tempfile.mkdtemp(prefix="srez-bench-template-"))
    backends = {
        "template": LocalBackend(root / "template" / "state", run_template=True),
        "fresh": LocalBackend(root / "fresh" / "state", run_template=False),
    }
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in backends}
    try:
        for i in range(ROUNDS):
            order = list(backends) if i % 2 == 0 else list(reversed(backends))
            for name in order:
                got = await _round(backends[name], root / name / "results")
                for key, values in got.items():
                    samples[name].setdefault(key, []).extend(values)
    finally:
        for backend in backends.values():
            backend.close()
        shutil.rmtree(root, ignore_errors=True)
    out: dict[str, Any] = {
        "runs_per_path": RUNS * ROUNDS,
        "targets": {"cpu_s_per_start": TARGET_CPU_S, "idle_rss_mb": TARGET_IDLE_RSS_MB},
    }
    for name, got in samples.items():
        out[name] = {
            "runs_ok": len(got.get("cpu", [])),
            "cpu_s_per_start": _median(got.get("cpu", [])),
            "launch_to_ready_p50_s": _median(got.get("ready", [])),
            "idle_rss_mb": _median(got.get("rss", []), 1),
            "idle_pss_mb": _median(got.get("pss", []), 1),
        }
        if "template_rss" in got:
            out[name]["template"] = {
                "rss_mb": _median(got["template_rss"], 1),
                "pss_mb": _median(got["template_pss"], 1),
                "cpu_s": _median(got["template_cpu"]),
            }
    fresh, forked = out["fresh"], out["template"]
    if fresh["cpu_s_per_start"] and forked["cpu_s_per_start"]:
        out["fresh_over_template"] = {
            key: round(fresh[key] / forked[key], 1)
            for key in ("cpu_s_per_start", "launch_to_ready_p50_s", "idle_pss_mb")
            if fresh[key] and forked[key]
        }
        out["template_vs_target"] = {
            "cpu_s_per_start": round(forked["cpu_s_per_start"] / TARGET_CPU_S, 2),
            "idle_rss_mb": round((forked["idle_rss_mb"] or 0) / TARGET_IDLE_RSS_MB, 2),
        }
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(template_figures()), indent=2))
