"""The loudest-anomaly calibrator (docs/environment.md §6.13, exactly).

Evaluated at clock 0 without advancing the clock: for every service and metric it reads
``get_metrics(s, m, window="30m")`` and scores ``z = |last - baseline_1h| / max(0.0173 |b|, floor)``.
It blames the service of the largest z, or ``none`` below 6. The hard tier is built so that it is
wrong on every hard task, robustly: :func:`worst_case` bounds z over the render noise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from srez_env.env import SREEnv
from srez_env.task import SERVICES, Task
from srez_env.telemetry.metrics import METRICS, true_value
from srez_env.telemetry.noise import EXACT_METRICS, PERCENT_METRICS, UNIT_RANGE_METRICS

NOISE_SD: Final = 0.0173  # sd of the +-3 % uniform render noise
BLAME_THRESHOLD: Final = 6.0
FLOORS: Final = {
    "error_rate": 0.005,
    "hit_ratio": 0.005,
    "cache_hit_ratio_observed": 0.005,
    "http_429_rate": 10.0,
    "tls_handshake_errors": 10.0,
    "evictions_per_s": 10.0,
    "restarts": 1.0,
    "connections": 1.0,
    "db_pool_in_use": 1.0,
    "used_memory_mb": 1.0,
}


def z_score(last: float, baseline: float, metric: str) -> float:
    """How many noise standard deviations ``last`` is from the baseline."""
    return abs(last - baseline) / max(NOISE_SD * abs(baseline), FLOORS.get(metric, 1e-9))


@dataclass(frozen=True, slots=True)
class Loudest:
    """The calibrator's verdict."""

    blame: str  # a service, or "none"
    service: str  # of the largest z
    metric: str
    z: float
    per_service: dict[str, float]  # the largest z of each service


def loudest(task: Task) -> Loudest:
    """Runs the calibrator on a task's T0 observations."""
    env = SREEnv(task, agent="loudest")
    env.reset()
    best = ("", "", -1.0)
    per: dict[str, float] = {}
    for s in SERVICES:
        for m in METRICS[s]:
            data = json.loads(env.observer.get_metrics(0, s, m, "30m"))
            z = z_score(float(data["last"]), float(data["baseline_1h"]), m)
            per[s] = max(per.get(s, 0.0), z)
            if z > best[2]:  # ties keep the earlier service, then the earlier metric
                best = (s, m, z)
    blame = best[0] if best[2] >= BLAME_THRESHOLD else "none"
    return Loudest(blame, best[0], best[1], best[2], per)


def _clip(metric: str) -> float:
    if metric in UNIT_RANGE_METRICS:
        return 1.0
    if metric in PERCENT_METRICS:
        return 100.0
    return float("inf")


def z_bounds(x: float, b: float, metric: str) -> tuple[float, float]:
    """Lowest and highest z over every rendering of the noise-free T0 value and baseline."""
    if metric in EXACT_METRICS:
        z = z_score(x, b, metric)
        return z, z
    clip = _clip(metric)
    xs = (min(clip, x * 0.97), min(clip, x * 1.03))
    bs = (min(clip, b * 0.97), min(clip, b * 1.03))
    zs = [z_score(a, c, metric) for a in xs for c in bs]
    overlap = xs[0] <= bs[1] and bs[0] <= xs[1]
    return (0.0 if overlap else min(zs)), max(zs)


def worst_case(task: Task) -> dict[str, tuple[float, float]]:
    """Per service, (lowest, highest) of its largest z under worst-case render noise (§6.13)."""
    env = SREEnv(task, agent="loudest")
    env.reset()
    world = env.world
    out: dict[str, tuple[float, float]] = {}
    for s in SERVICES:
        lo = hi = 0.0
        for m in METRICS[s]:
            x, b = true_value(world, s, m, 0), true_value(world, s, m, -150)
            low, high = z_bounds(x, b, m)
            lo, hi = max(lo, low), max(hi, high)
        out[s] = (lo, hi)
    return out


def margin(task: Task, blame: str) -> tuple[float, bool]:
    """(margin, robust) of a blame: the blamed service's lowest z over the root's highest z, and
    whether the blamed service's lowest z beats every other service's highest z."""
    bounds = worst_case(task)
    root = task.ground_truth.root_cause.service
    lowest = bounds[blame][0]
    robust = all(lowest > bounds[s][1] for s in SERVICES if s != blame)
    if root == "none" or root == blame:
        return float("inf"), robust
    root_high = bounds[root][1]
    return (lowest / root_high if root_high > 0 else float("inf")), robust
