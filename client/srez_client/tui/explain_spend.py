"""The AI tab's own spending cap, kept in ``$SREZ_STATE/explain-spend.json``.

Explaining runs costs money that is not the run's: it is counted here and never in a run's
usage. Before a call, the most it can cost is reserved (prompt estimate plus the answer's token
limit) and the call is refused if that would pass the cap; afterwards the reservation is settled
to the real cost. A crash between the two overstates the spend, never understates it
(docs/security.md A11). Every write is atomic.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from srez_core.atomic import atomic_write_json

SPEND_FILE: Final = "explain-spend.json"
_LOCK = threading.Lock()


class CapReached(Exception):
    """A call would pass the spending cap."""


@dataclass(frozen=True, slots=True)
class Reservation:
    """Money set aside for one call."""

    amount: float


class SpendLedger:
    """Spent and reserved dollars, persisted."""

    def __init__(self, state_dir: Path, cap_usd: float) -> None:
        self.path = state_dir / SPEND_FILE
        self.cap_usd = cap_usd

    def _load(self) -> dict[str, float]:
        out = {"spent_usd": 0.0, "reserved_usd": 0.0, "calls": 0.0}
        try:
            value = orjson.loads(self.path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return out
        if isinstance(value, dict):
            for key in out:
                number = value.get(key)
                if isinstance(number, int | float) and not isinstance(number, bool):
                    out[key] = float(number)
        return out

    def _save(self, data: dict[str, float]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write_json(self.path, {**data, "cap_usd": self.cap_usd})

    def spent(self) -> float:
        """Dollars spent (and still reserved) so far."""
        data = self._load()
        return data.get("spent_usd", 0.0) + data.get("reserved_usd", 0.0)

    def reserve(self, amount: float) -> Reservation:
        """Set ``amount`` aside.

        Raises:
            CapReached: If the spend plus ``amount`` would pass the cap.
        """
        with _LOCK:
            data = self._load()
            total = data.get("spent_usd", 0.0) + data.get("reserved_usd", 0.0)
            if total + amount > self.cap_usd:
                msg = (
                    f"spending cap reached: ${total:.4f} of ${self.cap_usd:.2f} spent, this "
                    f"question may cost up to ${amount:.4f} (raise SREZ_EXPLAIN_CAP_USD)"
                )
                raise CapReached(msg)
            data["reserved_usd"] = data.get("reserved_usd", 0.0) + amount
            self._save(data)
            return Reservation(amount)

    def settle(self, reservation: Reservation, cost: float) -> None:
        """Replace a reservation by what the call really cost (0 if it failed)."""
        with _LOCK:
            data = self._load()
            data["reserved_usd"] = max(0.0, data.get("reserved_usd", 0.0) - reservation.amount)
            data["spent_usd"] = data.get("spent_usd", 0.0) + cost
            data["calls"] = data.get("calls", 0.0) + (1 if cost else 0)
            self._save(data)
