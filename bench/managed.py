"""``make bench``: what the managed runner costs per task, and how fast summaries rebuild.

* Runner overhead: the same scripted tasks run bare (``run_to_results``, what ``srez eval``
  does) and through the managed runner (checkpoint writes, ledger, logs, summary), on ``inline``
  and on ``local``; reported per task, with the runner's overhead and the local/inline ratio.
* Summaries: ``summarize`` of a synthetic run of 10 targets × 40 tasks, without and with the
  chart (matplotlib's import is paid once, before the timing).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from srez_client.backends.base import LaunchSpec
from srez_client.backends.config import BackendSettings
from srez_client.backends.registry import get_backend
from srez_client.lifecycle.run import run_to_results, scratch_dir
from srez_client.managed.api import create_managed
from srez_client.managed.models import Checkpoint, TaskRecord, make_target
from srez_client.managed.runner import run_managed
from srez_client.managed.store import ManagedPaths, save_checkpoint
from srez_client.managed.summarize import summarize

TASKS = ("sre-001", "sre-002", "sre-003", "sre-004", "sre-005")


async def _bare(backend_name: str, state: Path, results: Path, *, warm: bool = False) -> float:
    backend = get_backend(backend_name, BackendSettings(state))
    started = time.perf_counter()
    for task in TASKS[:1] if warm else TASKS:
        spec = LaunchSpec(task_id=task, agent_spec="scripted", results_root=results)
        outcome = await run_to_results(backend, spec, scratch_dir(state))
        await backend.remove(outcome.handle)
    return (time.perf_counter() - started) / len(TASKS)


async def _managed(backend_name: str, state: Path, results: Path) -> float:
    name = f"bench-{backend_name}"
    create_managed(
        results, name, targets=[make_target("scripted")], tasks=TASKS, backend=backend_name
    )
    backend = get_backend(backend_name, BackendSettings(state))
    started = time.perf_counter()
    status = await run_managed(ManagedPaths.of(results, name), backend, state, png=False)
    elapsed = time.perf_counter() - started
    if status != 0:
        msg = f"managed bench run on {backend_name} ended with status {status}"
        raise RuntimeError(msg)
    return elapsed / len(TASKS)


def _synthetic(root: Path, targets: int = 10, tasks: int = 40) -> ManagedPaths:
    from srez_env.tasks import load_tasks

    ids = [t.id for t in load_tasks(None)][:tasks]
    models = [make_target("llm", f"openai/model-{i}") for i in range(targets - 3)]
    chosen = [make_target(b) for b in ("random", "heuristic", "scripted")] + models
    create_managed(root, "synthetic", targets=chosen, tasks=ids, backend="inline")
    paths = ManagedPaths.of(root, "synthetic")
    for n, target in enumerate(chosen):
        cp = Checkpoint(target=target.name)
        for i, task in enumerate(ids):
            cp = cp.with_record(
                TaskRecord(
                    task_id=task,
                    attempt=1,
                    status="completed" if (i + n) % 7 else "provider_error",
                    started_at="2026-01-01T00:00:00.000Z",
                    reward=((i * 31 + n * 17) % 100) / 100,
                    resolved=(i + n) % 3 == 0,
                    passed=(i + n) % 5 == 0,
                    cost_usd=0.01 * (n % 4),
                )
            )
        save_checkpoint(paths, cp)
    return paths


def bench_managed() -> dict[str, float]:
    """Run the managed-run benchmarks; returns figures in milliseconds (and a ratio)."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="srez-bench-managed-") as tmp:
        root = Path(tmp)
        old_state = os.environ.get("SREZ_STATE")
        os.environ["SREZ_STATE"] = str(root / "state")
        try:
            for backend in ("inline", "local"):
                asyncio.run(_bare(backend, root / "state", root / "warm", warm=True))
                bare = asyncio.run(_bare(backend, root / "state", root / f"bare-{backend}"))
                managed = asyncio.run(_managed(backend, root / "state", root / f"m-{backend}"))
                out[f"{backend}_bare_ms_per_task"] = bare * 1000
                out[f"{backend}_managed_ms_per_task"] = managed * 1000
                out[f"{backend}_runner_overhead_ms_per_task"] = (managed - bare) * 1000
            out["local_over_inline_managed_ratio"] = (
                out["local_managed_ms_per_task"] / out["inline_managed_ms_per_task"]
            )
            paths = _synthetic(root / "synthetic")
            summarize(paths, png=False)  # warm: task files read once
            started = time.perf_counter()
            summarize(paths, png=False)
            out["summarize_10x40_ms"] = (time.perf_counter() - started) * 1000
            summarize(paths, png=True)  # pays matplotlib's import
            started = time.perf_counter()
            summarize(paths, png=True)
            out["summarize_10x40_with_png_ms"] = (time.perf_counter() - started) * 1000
        finally:
            if old_state is None:
                os.environ.pop("SREZ_STATE", None)
            else:
                os.environ["SREZ_STATE"] = old_state
    return {k: round(v, 3) for k, v in out.items()}


if __name__ == "__main__":
    for key, value in bench_managed().items():
        print(f"{key:45s} {value:10.2f}")
