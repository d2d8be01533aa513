"""Metric values and the ``get_metrics`` observation (docs/environment.md §3.7, §6.2, §6.7)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Final

from srez_env.sim.timeline import World
from srez_env.telemetry.noise import render, sig3
from srez_env.world import topology as topo

COMMON: Final = ("rps", "error_rate", "latency_p99_ms", "cpu_pct", "mem_pct", "restarts")
METRICS: Final = {
    "gateway": (*COMMON, "http_429_rate", "tls_handshake_errors"),
    "auth": (*COMMON, "db_pool_in_use", "http_429_rate"),
    "payments": (*COMMON, "db_pool_in_use", "cache_hit_ratio_observed"),
    "cache": (*COMMON, "hit_ratio", "evictions_per_s", "used_memory_mb"),
    "db": (*COMMON, "connections", "qps", "disk_used_pct"),
}
UNITS: Final = {
    "rps": "req/s",
    "error_rate": "ratio",
    "latency_p99_ms": "ms",
    "cpu_pct": "%",
    "mem_pct": "%",
    "restarts": "count/1h",
    "http_429_rate": "req/s",
    "tls_handshake_errors": "1/s",
    "db_pool_in_use": "connections",
    "cache_hit_ratio_observed": "ratio",
    "hit_ratio": "ratio",
    "evictions_per_s": "keys/s",
    "used_memory_mb": "MB",
    "connections": "connections",
    "qps": "queries/s",
    "disk_used_pct": "%",
}


def true_value(world: World, service: str, metric: str, minute: int) -> float:
    """The noise-free value of a metric at a minute."""
    if metric == "restarts":
        return float(world.at(minute).restarts_1h[service])
    st = world.snapshot(minute)[service]
    match metric:
        case "rps":
            return st.rps
        case "error_rate":
            return st.err
        case "latency_p99_ms":
            return st.p99_ms
        case "cpu_pct":
            return st.cpu_pct
        case "mem_pct":
            return st.mem_pct
        case _:
            return float(st.extra[metric])


def observed(world: World, seed: int, service: str, metric: str, minute: int) -> float:
    """The rendered (noisy) value of a metric at a minute."""
    return render(seed, service, metric, minute, true_value(world, service, metric, minute))


def baseline_1h(world: World, seed: int, service: str, metric: str) -> float:
    """Mean of the 60 rendered values of the fixed hour T0-180 ... T0-121, summed in order."""
    first, last = topo.BASELINE_WINDOW
    values = [observed(world, seed, service, metric, m) for m in range(first, last + 1)]
    # six significant digits, not three: the loudest-anomaly calibrator divides by it
    return float(format(sum(values) / len(values), ".6g"))


def metric_window(
    world: World, seed: int, service: str, metric: str, clock: int, window_min: int, t0: datetime
) -> dict[str, object]:
    """The ``get_metrics`` result: at most 30 bucket means ending at ``clock``, and summaries."""
    bucket = math.ceil(window_min / 30)
    start = clock - window_min + 1
    points = []
    for lo in range(start, clock + 1, bucket):
        hi = min(clock, lo + bucket - 1)
        values = [observed(world, seed, service, metric, m) for m in range(lo, hi + 1)]
        points.append((hi, sig3(sum(values) / len(values))))
    means = [v for _m, v in points]
    return {
        "service": service,
        "metric": metric,
        "unit": UNITS[metric],
        "window": f"{window_min}m",
        "bucket_min": bucket,
        "points": [[topo.timestamp(t0, minute), value] for minute, value in points],
        "min": min(means),
        "max": max(means),
        "last": observed(world, seed, service, metric, clock),
        "baseline_1h": baseline_1h(world, seed, service, metric),
    }
