"""The latency model of a call (docs/environment.md §6.4): an exponential body plus *stalls*.

A stall is a mass of requests that waits for a timeout. Callers inherit their dependencies'
stalls, delayed by their own time and cut (as errors) at their own timeout; p99 is the larger of
the body's p99 and the slowest stall that still holds 1 % of requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from srez_env.world import topology as topo


@dataclass(frozen=True, slots=True)
class Stall:
    """A share of requests that waits ``ms`` for a timeout; ``error`` unless it fails open."""

    ms: float
    mass: float
    error: bool


def p_timeout(timeout_ms: float, mean_ms: float) -> float:
    """Probability that an exponential call of mean ``mean_ms`` outlasts the timeout."""
    return math.exp(-timeout_ms / mean_ms) if mean_ms > 0 else 0.0


def truncated_mean(mean_ms: float, timeout_ms: float) -> float:
    """Mean of min(X, T) for an exponential X: the body time a caller spends on one call."""
    return mean_ms * (1 - math.exp(-timeout_ms / mean_ms)) if mean_ms > 0 else 0.0


def p99_of(mu_ms: float, stalls: list[Stall]) -> float:
    """max(4.6 x body mean, the slowest stall time whose tail mass reaches 1 %)."""
    mass = 0.0
    slowest = 0.0
    for stall in sorted(stalls, key=lambda s: -s.ms):
        mass += stall.mass
        if mass >= 0.01:
            slowest = stall.ms
            break
    return max(topo.TAIL_FACTOR * mu_ms, slowest)


def fail_open_mass(stalls: list[Stall], at_least_ms: float) -> float:
    """Mass of the fail-open stalls that a caller with this timeout cuts off (and so fails)."""
    return sum(s.mass for s in stalls if not s.error and s.ms >= at_least_ms)


def inherit(stalls: list[Stall], timeout_ms: float, share: float, own_ms: float) -> list[Stall]:
    """A dependency's stalls as the caller sees them: delayed by the caller's own time, and cut
    (as errors) at the caller's timeout."""
    out = []
    for s in stalls:
        if s.ms < timeout_ms:
            out.append(Stall(s.ms + own_ms, share * s.mass, s.error))
        else:
            out.append(Stall(timeout_ms + own_ms, share * s.mass, True))
    return out
