"""Hash-based noise that does not depend on query order (docs/environment.md §6.7).

Every random-looking choice is a function of its coordinates (seed, service, metric or line,
minute...), hashed with BLAKE2b: never Python's ``hash()`` (randomised per process), never the
global ``random`` module, never the wall clock. So reading metrics in any order, in any process,
gives the same numbers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Final

EXACT_METRICS: Final = frozenset({"restarts", "db_pool_in_use", "connections", "used_memory_mb"})
UNIT_RANGE_METRICS: Final = frozenset({"error_rate", "hit_ratio", "cache_hit_ratio_observed"})
PERCENT_METRICS: Final = frozenset({"cpu_pct", "mem_pct", "disk_used_pct"})
NOISE: Final = 0.03


def unit_hash(*coords: object) -> float:
    """A uniform number in [0, 1) determined by the coordinates alone."""
    return text_hash("|".join(map(str, coords)))


def text_hash(text: str, _blake2b: Callable[..., Any] = hashlib.blake2b) -> float:
    """:func:`unit_hash` of coordinates already joined by ``|`` (``f"{seed}|{service}|..."``):
    the log renderer builds each minute's prefix once for its thousands of draws."""
    return int.from_bytes(_blake2b(text.encode(), digest_size=8).digest(), "big") / 2**64


def sig3(x: float) -> float:
    """``x`` rounded to three significant digits."""
    return float(format(x, ".3g"))


def render(seed: int, service: str, metric: str, minute: int, value: float) -> float:
    """A metric value as observed: +-3 % noise, clipped to its domain, 3 significant digits.

    Integer gauges are exact, and zero stays zero.
    """
    if metric in EXACT_METRICS:
        return float(value)
    x = value * (1 + NOISE * (2 * unit_hash(seed, service, metric, minute) - 1))
    if metric in UNIT_RANGE_METRICS:
        x = min(1.0, x)
    elif metric in PERCENT_METRICS:
        x = min(100.0, x)
    return sig3(x)
