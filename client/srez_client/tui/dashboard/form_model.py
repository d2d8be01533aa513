"""What the create and add-target forms collect, checked as plain Python (no urwid).

Each function raises ``ValueError`` (a :class:`~srez_client.errors.UsageError` where the managed
models already say it) with one line the form shows as it is; nothing is created until every
field is right.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

from srez_client.backends.registry import BACKEND_NAMES
from srez_client.managed.models import BASELINES, Target, check_name, make_target
from srez_client.sanitize import sanitize_line
from srez_client.tui.dashboard.source import CreateRequest

DEFAULT_BACKEND: Final = "local"
"""The embedded default backend (docs/design.md §9)."""


def parse_usd(text: str, what: str = "daily budget") -> float | None:
    """An amount of USD; empty means none.

    Raises:
        ValueError: Not a number, negative or not finite.
    """
    text = text.strip().removeprefix("$").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        msg = (
            f"{what} {sanitize_line(text)!r} is not an amount of USD (e.g. 5 or 2.50; empty: none)"
        )
        raise ValueError(msg)
    return value


def parse_tasks(text: str) -> tuple[str, ...]:
    """``all`` (or empty) as ``()``, else the comma- or space-separated task ids, in order.

    Raises:
        ValueError: An id that cannot name a task file.
    """
    words = [w for w in text.replace(",", " ").split() if w]
    if not words or [w.lower() for w in words] == ["all"]:
        return ()
    seen: list[str] = []
    for word in words:
        check_name(word, "task id")
        if word not in seen:
            seen.append(word)
    return tuple(seen)


def build_targets(
    baselines: Iterable[str], models: Iterable[str], existing: Sequence[str] = ()
) -> tuple[Target, ...]:
    """Targets for the chosen baselines then models, leaving out those already in the run.

    Raises:
        ValueError: A bad baseline or slug, or nothing new chosen.
    """
    targets: list[Target] = []
    for baseline in baselines:
        targets.append(make_target(baseline))
    for slug in models:
        targets.append(make_target("llm", slug))
    fresh = [t for t in targets if t.name not in existing]
    unique = list({t.name: t for t in fresh}.values())
    if not unique:
        what = "no new target" if targets else "no target"
        msg = f"{what}: tick a baseline ({', '.join(BASELINES)}) or pick models"
        raise ValueError(msg)
    return tuple(unique)


def create_request(
    *,
    name: str,
    baselines: Iterable[str],
    models: Iterable[str],
    tasks: str,
    backend: str,
    budget: str,
    cost_cap: str = "",
) -> CreateRequest:
    """The create form's fields as one request.

    Raises:
        ValueError: The first field that is wrong, and why.
    """
    name = name.strip()
    if not name:
        msg = "the run needs a name"
        raise ValueError(msg)
    check_name(name, "managed run name")
    if backend not in BACKEND_NAMES:
        msg = f"unknown backend {backend!r} (known: {', '.join(BACKEND_NAMES)})"
        raise ValueError(msg)
    targets = build_targets(baselines, models)
    daily = parse_usd(budget)
    cap = parse_usd(cost_cap, "cost cap")
    if cap == 0:
        msg = "cost cap must be more than 0 (empty: no cap)"
        raise ValueError(msg)
    if daily is not None and cap is None and any(t.is_llm for t in targets):
        msg = "a daily budget with LLM targets needs a cost cap per task (reserved before each)"
        raise ValueError(msg)
    return CreateRequest(
        name=name,
        targets=targets,
        tasks=parse_tasks(tasks),
        backend=backend,
        daily_budget_usd=daily,
        cost_cap_usd=cap,
    )


__all__ = ["DEFAULT_BACKEND", "build_targets", "create_request", "parse_tasks", "parse_usd"]
