"""Clocks and timestamps: the current time in UTC and the one format every file states it in."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]
"""Returns the current time as an aware datetime."""


def system_clock() -> datetime:
    """The current time in UTC."""
    return datetime.now(UTC)


def utc_timestamp(moment: datetime) -> str:
    """Format a time as UTC ISO-8601 with milliseconds and a ``Z`` suffix.

    Args:
        moment: An aware datetime (a naive one is refused).

    Returns:
        E.g. ``2025-03-14T10:03:00.125Z``.

    Raises:
        ValueError: If ``moment`` is naive.
    """
    if moment.tzinfo is None:
        msg = f"naive datetime {moment!r}: pass an aware time (UTC)"
        raise ValueError(msg)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
