"""What the bootstrap intervals add to a report: :func:`~srez_client.results.report.build_report`
over 5 agents × 40 tasks × 3 seeds of made-up grades (rewards spread from a seeded generator),
with intervals (2000 resamples per aggregate, and each leaderboard pair compared) against
without. The median of 5 builds each; figures only: nothing here is asserted.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any, Final

from srez_client.results.report import DIFFICULTIES, build_report

AGENTS: Final = ("scripted", "heuristic", "random", "noop", "restart-all")
TASKS: Final = 40
SEEDS: Final = 3
KINDS: Final = 14


def grades() -> list[dict[str, object]]:
    """The grades the report is built from."""
    rng = random.Random(5)
    out: list[dict[str, object]] = []
    for a, agent in enumerate(AGENTS):
        for t in range(TASKS):
            for seed in range(SEEDS):
                reward = min(1.0, max(0.0, rng.gauss(1.0 - 0.2 * a, 0.25)))
                out.append(
                    {
                        "task_id": f"sre-{t + 1:03d}",
                        "agent": agent,
                        "run_seed": seed,
                        "difficulty": DIFFICULTIES[t % 3],
                        "fault_kind": f"kind-{t % KINDS}",
                        "steps": 8,
                        "checks": {"safe": {"pass": True}},
                        "resolved": reward > 0.5,
                        "passed": reward > 0.7,
                        "reward": {"total": reward},
                        "metrics": {},
                    }
                )
    return out


def _median_s(fn: Any, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def report_figures() -> dict[str, Any]:
    """Build time with and without intervals."""
    data = grades()
    build_report(data)
    with_s = _median_s(lambda: build_report(data))
    without_s = _median_s(lambda: build_report(data, bootstrap=None))
    return {
        "agents": len(AGENTS),
        "tasks": TASKS,
        "seeds": SEEDS,
        "with_intervals_s": round(with_s, 3),
        "without_intervals_s": round(without_s, 3),
        "intervals_vs_without": round(with_s / without_s, 1),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(report_figures(), indent=2))
