"""Numbers read from a run folder are checked before anything counts or shows them.

A results folder may be shared, and a run folder may have been planted: its ``summary.json`` and
``result.json`` are data, never trusted. A number that is not finite, or beyond what a real run
writes, would break what reads it (``1e20`` steps overflow a JSON encoder; two rewards of ``1e308``
make a mean infinite, ranked first). :func:`problem` names the first such number of a file, and
the run is then shown as *damaged*, its figures left out of every aggregate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

NUMBER_MAX: Final = float(2**53)
"""The largest magnitude of any number a run writes: a set's seed reaches it (a browser reads
JSON numbers as doubles, exact up to here); tokens, costs and times stay far below."""
STEPS_MAX: Final = 10_000
"""The most steps a run can record (a task's budget is at most 60)."""
UNIT: Final = ("reward", "reward.total", "reward.components.")
"""Fields that are shares, in [0, 1] (a name ending in ``.`` covers every field under it)."""
COUNTS: Final = ("steps", "max_steps", "metrics.invalid_actions")
"""Fields that are step counts, in [0, :data:`STEPS_MAX`]."""


def _is_unit(path: str) -> bool:
    return any(path == u or (u.endswith(".") and path.startswith(u)) for u in UNIT)


def _number_problem(path: str, value: float) -> str | None:
    if not math.isfinite(value) or abs(value) > NUMBER_MAX:
        return f"{path} = {value!r} is not a number a run writes"
    if _is_unit(path) and not 0.0 <= value <= 1.0:
        return f"{path} = {value!r} is outside [0, 1]"
    if path in COUNTS and not 0 <= value <= STEPS_MAX:
        return f"{path} = {value!r} is outside [0, {STEPS_MAX}]"
    return None


def problem(data: Any, path: str = "") -> str | None:
    """The first number of ``data`` (a parsed JSON file) out of range, as one line; None when
    every number is one a real run could have written."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            found = problem(value, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found = problem(value, f"{path}[{i}]")
            if found:
                return found
    elif isinstance(data, int | float) and not isinstance(data, bool):
        return _number_problem(path, float(data))
    return None
