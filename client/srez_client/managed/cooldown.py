"""The provider cooldown of a managed run: when a model provider fails on several tasks in a row
(an outage, a revoked key), the runner pauses the queue with the reason ``provider`` instead of
burning through every remaining task; ``srez managed run`` lifts the pause once the cooldown has
passed (or ``clear-pause`` lifts it at once). The tasks that ended on provider errors are re-run,
never counted.

:func:`seconds_until_lifted` says how long a pause of either kind has left, for ``srez managed run
--wait``, which sleeps through budget and provider pauses instead of exiting.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, time, timedelta
from typing import Final

from srez_client.errors import UsageError
from srez_client.managed.models import PauseInfo
from srez_env.env_vars import env_number

PROVIDER_PAUSE_AFTER: Final = 3
"""Consecutive tasks ending on provider errors that pause the queue (reason ``provider``)."""
COOLDOWN_ENV: Final = "SREZ_PROVIDER_COOLDOWN_S"
"""How long a provider pause lasts before ``run`` lifts it (default 900 s)."""


def provider_cooldown_s(environ: Mapping[str, str]) -> float:
    """``$SREZ_PROVIDER_COOLDOWN_S`` (default 900); a bad value is a usage error."""
    return env_number(environ, COOLDOWN_ENV, 900.0, error=UsageError)


def seconds_since(iso: str) -> float:
    """Seconds from the UTC ISO-8601 time ``iso`` to now (a time that does not parse is long ago)."""
    try:
        then = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return float("inf")
    return (datetime.now(UTC) - then).total_seconds()


def seconds_until_lifted(
    pause: PauseInfo, *, now: datetime, cooldown_s: float, day_is_forced: bool
) -> float | None:
    """How long ``pause`` has left before ``run`` would lift it, or None if it never lifts by
    itself: a ``user`` pause, or a ``budget`` pause while the ledger day is forced
    (``$SREZ_TODAY``: that day never ends).

    Args:
        pause: The ``PAUSE`` flag.
        now: The current time, timezone-aware (the ledger's day is the local date).
        cooldown_s: The provider cooldown.
        day_is_forced: Whether ``$SREZ_TODAY`` sets the ledger day.
    """
    if pause.reason == "provider":
        try:
            then = datetime.fromisoformat(pause.at.replace("Z", "+00:00"))
        except ValueError:
            return 0.0
        return max(0.0, cooldown_s - (now - then).total_seconds())
    if pause.reason == "budget" and not day_is_forced:
        local = now.astimezone()
        if pause.day < local.date().isoformat():
            return 0.0
        midnight = datetime.combine(local.date() + timedelta(days=1), time.min, local.tzinfo)
        return max(0.0, (midnight - local).total_seconds())
    return None
