"""The provider cooldown of a managed run: when a model provider fails on several tasks in a row
(an outage, a revoked key), the runner pauses the queue with the reason ``provider`` instead of
burning through every remaining task; ``srez managed run`` lifts the pause once the cooldown has
passed (or ``clear-pause`` lifts it at once). The tasks that ended on provider errors are re-run,
never counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Final

from srez_client.errors import UsageError

PROVIDER_PAUSE_AFTER: Final = 3
"""Consecutive tasks ending on provider errors that pause the queue (reason ``provider``)."""
COOLDOWN_ENV: Final = "SREZ_PROVIDER_COOLDOWN_S"
"""How long a provider pause lasts before ``run`` lifts it (default 900 s)."""


def provider_cooldown_s(environ: Mapping[str, str]) -> float:
    """``$SREZ_PROVIDER_COOLDOWN_S`` (default 900); a bad value is a usage error."""
    raw = environ.get(COOLDOWN_ENV, "").strip()
    try:
        value = float(raw) if raw else 900.0
    except ValueError:
        value = -1.0
    if not value >= 0:
        msg = f"{COOLDOWN_ENV}={raw!r} is not a number of seconds >= 0"
        raise UsageError(msg)
    return value


def seconds_since(iso: str) -> float:
    """Seconds from the UTC ISO-8601 time ``iso`` to now (a time that does not parse is long ago)."""
    try:
        then = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return float("inf")
    return (datetime.now(UTC) - then).total_seconds()
