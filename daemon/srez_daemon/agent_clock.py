"""The agent's clock: wall time in the agent phase minus the provider waits the harness excludes.

Pure logic (no I/O, no clock of its own: every method takes ``now``, a monotonic reading), used
by the run controller (:mod:`srez_daemon.run`) for the time limit (:func:`time_left`).

A ``provider_error`` note says the agent is about to wait ``retry_in_s`` seconds for its model
provider (a backoff or a cooldown). That claim is believed only so far:

* **Attested agents only.** Only the built-in LLM agents' notes exclude time
  (:func:`srez_daemon.attest.provider_waits_attested`); a custom command's notes are recorded in
  the dialog and exclude nothing, so it cannot buy itself time by claiming a cooldown.
* **Observed, not told.** A wait opens at the note and closes at the agent's next request to the
  agent socket (a tool call, a submit or another note). What it excludes is the smaller of the
  claim and the wall time the daemon saw pass between the two. While it is still open, the time
  passed so far counts (so a real cooldown does not trip the limit half-way through).
* **Capped per note** (``note_cap_s``, default 120 s: the longest ``Retry-After`` the provider
  SDKs honour) **and per run** (``run_cap_s``). The run's hard wall-clock cap (a setting of the
  daemon, :class:`~srez_daemon.settings.DaemonSettings`) ends the agent phase whatever was
  excluded.

A claim that is not a positive number (null, a string, NaN, negative) excludes nothing; ``1e300``
and infinity are just long claims, which the caps bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(slots=True)
class _OpenWait:
    since: float
    """When the note arrived (monotonic seconds)."""
    claim_s: float
    """What the note claimed, already capped per note."""


@dataclass(slots=True)
class AgentClock:
    """Provider waits excluded from one agent phase.

    Args:
        attested: Whether the agent's provider notes are believed at all.
        note_cap_s: The most one note can exclude.
        run_cap_s: The most the whole run can exclude.
    """

    attested: bool
    note_cap_s: float
    run_cap_s: float
    _closed_s: float = 0.0
    _open: _OpenWait | None = field(default=None)

    def note(self, retry_in_s: object, now: float) -> None:
        """A ``provider_error`` note arrived at ``now`` claiming a wait of ``retry_in_s``."""
        self.activity(now)  # a note is a request too: it closes the wait before it
        claim = _claim(retry_in_s, self.note_cap_s)
        if self.attested and claim > 0:
            self._open = _OpenWait(since=now, claim_s=claim)

    def activity(self, now: float) -> None:
        """The agent made a request at ``now``: an open wait closes at what was observed."""
        if self._open is not None:
            self._closed_s += self._observed(self._open, now)
            self._open = None

    def excluded_s(self, now: float) -> float:
        """Seconds excluded from the agent's time so far, the open wait's part included."""
        total = self._closed_s
        if self._open is not None:
            total += self._observed(self._open, now)
        return min(total, self.run_cap_s)

    @staticmethod
    def _observed(wait: _OpenWait, now: float) -> float:
        return max(0.0, min(wait.claim_s, now - wait.since))


def _claim(value: object, note_cap_s: float) -> float:
    """A note's ``retry_in_s`` as a wait, capped per note (0 when it claims none)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    number = float(value)
    if math.isnan(number) or number <= 0:
        return 0.0
    return min(number, note_cap_s)


def time_left(
    elapsed_s: float, excluded_s: float, limit_s: float | None, wall_s: float | None
) -> tuple[float, str | None]:
    """Seconds the agent phase has left, and why it must end now (None while time is left).

    Args:
        elapsed_s: Wall time since the agent phase started.
        excluded_s: Provider waits excluded from the time limit so far.
        limit_s: The agent's time limit (provider waits excluded), or None.
        wall_s: The hard wall-clock cap (nothing excluded), or None; one of the two is set.
    """
    left = [] if wall_s is None else [wall_s - elapsed_s]
    if limit_s is not None:
        left.append(limit_s - (elapsed_s - excluded_s))
    if min(left) > 0:
        return min(left), None
    if limit_s is not None and left[-1] <= 0:
        return 0.0, f"the agent reached its {limit_s:g} s limit"
    return 0.0, f"the agent phase reached its hard wall-clock cap of {wall_s:g} s"
