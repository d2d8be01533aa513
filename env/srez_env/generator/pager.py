"""The page an incident opens with: a title and a brief written from what the world shows
(docs/environment.md §3.6, §6.17).

A page says what a pager says: the symptom at the edge, where users feel it, since when, and the
SLO. It is computed from the placed task's own history (the gateway's error rate and p99 minute by
minute, and which user route fails), never from its row, kind or root, and its words come from
paraphrase pools picked by hashes of the task's seed. So two tasks whose edges look alike get
pages that say the same things, and nothing in a page names the fault, its service or the matrix
row it came from: a lookup from the page to the answer learns no more than the symptoms teach.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from srez_env.sim.scenario import world_at_t0
from srez_env.task import Task

LOOKBACK_MIN: Final = 120
"""How far back the page looks for the start of the trouble."""
ROUTE_FAILING: Final = 0.02
"""A user route is failing when at least this share of its requests fail at T0."""
GAP_MIN: Final = 12
"""Healthy minutes between two bursts of one incident, at most (a leak's OOM kills come every 8
or 9 minutes)."""
ERR_SLO: Final = 0.01
P99_SLO_MS: Final = 500.0

SOURCES: Final = ("PagerDuty", "Alertmanager", "Opsgenie", "Grafana OnCall", "The on-call pager")
CLOSINGS: Final = (
    "Find the root cause and apply a minimal fix.",
    "Find what is wrong, fix it with the smallest change that lasts, and say what it was.",
    "Diagnose the cause, remediate it minimally, and declare what it was.",
    "Find the cause, repair it without collateral changes, and report it.",
)
TITLES: Final = {
    "both": ("Sign-in and checkout errors", "Errors on both user routes", "Site-wide errors"),
    "checkout": ("Checkout errors", "Purchases failing", "Checkout path degraded"),
    "signin": ("Sign-in errors", "Logins failing", "Sign-in path degraded"),
    "slow": ("Slow responses at the edge", "Latency SLO breached", "Requests slow at the gateway"),
    "resolved": ("Error spike earlier today", "Alert fired and cleared", "Earlier SLO breach"),
    "quiet": ("Health check requested", "Is production healthy?", "Confirm the system is fine"),
}
IMPACT: Final = {
    "both": (
        "Both sign-in and checkout requests are failing.",
        "Users report failures when signing in and when checking out.",
        "Errors show up on the login route and on the checkout route.",
    ),
    "checkout": (
        "Checkout requests are failing; sign-in looks unaffected.",
        "Customers cannot complete purchases, while logins go through.",
        "The checkout route is failing; the login route is fine.",
    ),
    "signin": (
        "Sign-in requests are failing; checkout looks unaffected.",
        "Users cannot log in, while existing sessions can still check out.",
        "The login route is failing; the checkout route is fine.",
    ),
    "slow": (
        "Requests succeed but are slow.",
        "Users report slow pages rather than errors.",
        "Responses come back, but late.",
    ),
}
PATTERN: Final = {
    "steady": ("It has not let up.", "It is ongoing.", "No sign of recovery yet."),
    "intermittent": (
        "It comes and goes: bursts of failures with quiet minutes between.",
        "It is intermittent, flapping between failing and healthy.",
        "The errors come in waves.",
    ),
}


@dataclass(frozen=True, slots=True)
class Page:
    title: str
    brief: str


@dataclass(frozen=True, slots=True)
class EdgeHistory:
    """What the gateway showed: per minute from ``-LOOKBACK_MIN`` to 0, whether the SLO broke."""

    breached: Sequence[bool]
    err_t0: float
    p99_t0_ms: float
    signin_failing: bool
    checkout_failing: bool

    @property
    def first_breach(self) -> int | None:
        """Minutes from T0 (negative) of the start of the latest trouble: the last breached minute
        and every earlier one within :data:`GAP_MIN` of the next, so a flapping fault counts from
        its first burst and a blip long before it (a decoy restart) does not."""
        start = None
        for offset in range(len(self.breached) - 1, -1, -1):
            if not self.breached[offset]:
                continue
            if start is not None and start - offset > GAP_MIN:
                break
            start = offset
        return None if start is None else start - LOOKBACK_MIN

    @property
    def intermittent(self) -> bool:
        first = self.first_breach
        if first is None:
            return False
        return not all(self.breached[first + LOOKBACK_MIN :])


def edge_history(task: Task) -> EdgeHistory:
    """The gateway's SLO minute by minute and the user routes failing at T0 (noise-free)."""
    world = world_at_t0(task)
    breached = []
    for minute in range(-LOOKBACK_MIN, 1):
        gw = world.snapshot(minute)["gateway"]
        breached.append(gw.err >= ERR_SLO or gw.p99_ms >= P99_SLO_MS)
    t0 = world.snapshot(0)
    return EdgeHistory(
        breached=tuple(breached),
        err_t0=t0["gateway"].err,
        p99_t0_ms=t0["gateway"].p99_ms,
        signin_failing=t0.route_err["signin"] >= ROUTE_FAILING,
        checkout_failing=t0.route_err["checkout"] >= ROUTE_FAILING,
    )


def _pick(options: Sequence[str], seed: int, slot: str) -> str:
    digest = hashlib.blake2b(f"{seed}:page:{slot}".encode(), digest_size=8).digest()
    return options[int.from_bytes(digest, "big") % len(options)]


def impact_of(edge: EdgeHistory) -> str:
    """Where users feel it at T0: ``both``, ``checkout``, ``signin``, ``slow`` or, with the SLO
    holding, ``resolved`` (it broke earlier in the window) or ``quiet``."""
    if edge.breached[-1]:
        if edge.signin_failing and edge.checkout_failing:
            return "both"
        if edge.checkout_failing:
            return "checkout"
        if edge.signin_failing:
            return "signin"
        if edge.err_t0 >= ERR_SLO:  # errors that no single route carries past the threshold
            return "both"
        return "slow"
    return "resolved" if edge.first_breach is not None else "quiet"


def page(task: Task) -> Page:
    """The title and brief of ``task``, from its own edge history and its seed."""
    edge = edge_history(task)
    impact = impact_of(edge)
    seed = task.seed
    source = _pick(SOURCES, seed, "source")
    closing = _pick(CLOSINGS, seed, "closing")
    title = _pick(TITLES[impact], seed, "title")
    first = edge.first_breach
    since = "" if first is None else f"{task.incident.start + timedelta(minutes=first):%H:%M}"
    if impact in IMPACT:
        if edge.err_t0 >= 0.995:
            figures = "every request fails (SLO: under 1% errors)"
        else:
            figures = (
                f"{round(edge.err_t0 * 100)}% of requests fail (SLO: under 1%) and p99 is "
                f"~{round(edge.p99_t0_ms, -1):.0f}ms (SLO: under {P99_SLO_MS:.0f}ms)"
            )
        slo = f"{source}: the gateway SLO has been breached since ~{since}Z: {figures}."
        pattern = _pick(PATTERN["intermittent" if edge.intermittent else "steady"], seed, "pat")
        text = [slo, _pick(IMPACT[impact], seed, "impact"), pattern, closing]
    elif impact == "resolved":
        text = [
            f"{source}: the gateway SLO broke at ~{since}Z and has recovered since.",
            "The incident commander wants to know whether anything is still broken.",
            closing,
        ]
    else:
        text = [
            f"{source}: no SLO is breached, but a teammate asks you to confirm that production "
            "is healthy.",
            closing,
        ]
    return Page(title=title, brief=" ".join(text))
