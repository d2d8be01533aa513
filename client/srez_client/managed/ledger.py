"""The daily API budget: an append-only ledger per calendar day under ``$SREZ_STATE/budget/``.

Before an LLM task the runner *reserves* its cost cap; after it, it *settles* the reservation
with the real cost. ``<day>.jsonl`` holds one JSON record per line, appended with ``O_APPEND``
and fsynced, under an exclusive ``flock`` so that several runners sharing a state folder
never over-commit the same day. Nothing is ever rewritten or removed, so what was spent can
only grow, across crashes too: a reservation whose runner died stays counted (at its full cap)
until the resume settles it. A torn last line (a crash mid-append) is ignored by readers, and the
next append starts on a fresh line.

Arithmetic (pure, :class:`BudgetView`): ``spent`` is the sum of settled costs, ``outstanding`` the
sum of unsettled reservations, ``committed = spent + outstanding``; a reservation of ``x`` is
granted when ``committed + x <= budget``. So the day's real spend exceeds the budget only when
a task overshoots its own cap.

The day is the local calendar day, or ``$SREZ_TODAY`` (``YYYY-MM-DD``) when set (tests, and
people who want another clock).
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Final

import orjson

from srez_client.errors import UsageError

TODAY_ENV: Final = "SREZ_TODAY"
"""Overrides the ledger's day (``YYYY-MM-DD``)."""
_DAY_RE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_EPS: Final = 1e-9


def today(environ: Mapping[str, str] | None = None) -> str:
    """The ledger day: ``$SREZ_TODAY`` if set, else the local date, as ``YYYY-MM-DD``.

    Raises:
        UsageError: If ``$SREZ_TODAY`` is not a date.
    """
    env = os.environ if environ is None else environ
    forced = env.get(TODAY_ENV, "").strip()
    if forced:
        try:
            return date.fromisoformat(forced).isoformat() if _DAY_RE.match(forced) else _bad(forced)
        except ValueError:
            return _bad(forced)
    return datetime.now(UTC).astimezone().date().isoformat()


def _bad(value: str) -> str:
    msg = f"{TODAY_ENV}={value!r} is not a date (expected YYYY-MM-DD)"
    raise UsageError(msg)


@dataclass(frozen=True, slots=True)
class BudgetView:
    """One day of the ledger, summed."""

    spent_usd: float = 0.0
    """Settled real costs."""
    outstanding_usd: float = 0.0
    """Reservations not settled yet (in flight, or left by a crashed runner)."""
    records: int = 0
    """Valid records read."""
    reserved_keys: frozenset[str] = frozenset()
    """Keys reserved that day."""
    settled_keys: frozenset[str] = frozenset()
    """Keys settled that day."""

    @property
    def committed_usd(self) -> float:
        """What the day's budget is charged with."""
        return self.spent_usd + self.outstanding_usd

    def left(self, budget_usd: float) -> float:
        """What can still be reserved today (never negative)."""
        return max(0.0, budget_usd - self.committed_usd)

    def admits(self, budget_usd: float, amount_usd: float) -> bool:
        """Whether a reservation of ``amount_usd`` fits in the budget."""
        return self.committed_usd + amount_usd <= budget_usd + _EPS


def sum_records(records: Iterable[Mapping[str, object]]) -> BudgetView:
    """Sum ledger records (pure). The first reserve and the first settle of a key count."""
    reserved: dict[str, float] = {}
    settled: dict[str, float] = {}
    count = 0
    for rec in records:
        op, key, usd = rec.get("op"), rec.get("key"), rec.get("usd")
        if not isinstance(key, str) or not isinstance(usd, int | float) or usd < 0:
            continue
        count += 1
        if op == "reserve":
            reserved.setdefault(key, float(usd))
        elif op == "settle":
            settled.setdefault(key, float(usd))
    outstanding = sum(v for k, v in reserved.items() if k not in settled)
    return BudgetView(
        spent_usd=sum(settled.values()),
        outstanding_usd=outstanding,
        records=count,
        reserved_keys=frozenset(reserved),
        settled_keys=frozenset(settled),
    )


def parse_lines(data: bytes) -> list[dict[str, object]]:
    """The valid records of a ledger file; torn or garbled lines are skipped."""
    out: list[dict[str, object]] = []
    for line in data.split(b"\n"):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


class BudgetLedger:
    """The ledger files of one state folder (``$SREZ_STATE/budget``)."""

    def __init__(self, folder: Path) -> None:
        """Use ``folder`` (created on first write)."""
        self.folder = folder

    def path(self, day: str) -> Path:
        """The file of ``day``."""
        if not _DAY_RE.match(day):
            msg = f"ledger day {day!r} is not YYYY-MM-DD"
            raise ValueError(msg)
        return self.folder / f"{day}.jsonl"

    def view(self, day: str) -> BudgetView:
        """The day's sums (an empty view when there is no file)."""
        try:
            data = self.path(day).read_bytes()
        except FileNotFoundError:
            return BudgetView()
        return sum_records(parse_lines(data))

    def reserve(self, day: str, key: str, usd: float, budget_usd: float) -> bool:
        """Reserve ``usd`` for ``key`` if the day's budget admits it; True when reserved.

        Reserving a key again (a resume) is granted without a second charge.
        """
        with self._locked(day) as fd:
            view = sum_records(parse_lines(_read_all(fd)))
            if key in view.reserved_keys:
                return True
            if not view.admits(budget_usd, usd):
                return False
            _append(fd, {"op": "reserve", "key": key, "usd": usd, "at": _now()})
            return True

    def settle(self, day: str, key: str, usd: float) -> None:
        """Record the real cost of ``key`` (once; a second settle of a key is ignored)."""
        with self._locked(day) as fd:
            view = sum_records(parse_lines(_read_all(fd)))
            if key not in view.settled_keys:
                _append(fd, {"op": "settle", "key": key, "usd": max(0.0, usd), "at": _now()})

    def _locked(self, day: str) -> _Locked:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return _Locked(self.path(day))


class _Locked:
    """An exclusive ``flock`` on a ledger file, opened for reading and appending."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> int:
        self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self.fd

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # closing releases the lock


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def _append(fd: int, record: dict[str, object]) -> None:
    """Append one line, on a fresh line after a torn tail, and fsync it."""
    size = os.fstat(fd).st_size
    lead = b"\n" if size and os.pread(fd, 1, size - 1) != b"\n" else b""
    os.write(fd, lead + orjson.dumps(record) + b"\n")
    os.fsync(fd)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
