"""Reading ``SREZ_*`` settings out of an environment mapping.

Light on purpose (the standard library only): the daemon reads its settings with it before it
answers its first request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TypeVar

Default = TypeVar("Default", float, None)


def env_number(
    environ: Mapping[str, str],
    name: str,
    default: Default,
    *,
    low: float = 0.0,
    error: type[Exception] = ValueError,
) -> float | Default:
    """The variable ``name`` as a finite number of at least ``low``; ``default`` when it is unset
    or blank.

    Raises:
        error: With one line naming the variable and its value, when that is not a finite number
            or is below ``low`` (each caller passes its own configuration error).
    """
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        msg = f"{name}={raw!r} is not a number"
        raise error(msg)
    if value < low:
        msg = f"{name}={raw!r} must be at least {low:g}"
        raise error(msg)
    return value
