"""What an attempt produced: the record fields read from its results folder.

``summary.json`` gains ``error_kind``, ``cost_usd`` and ``tokens`` with the LLM agent, and
``claimed_error_kind`` with attestation (:mod:`srez_daemon.attest`); until the installed
:class:`~srez_daemon.protocol.RunSummary` has them they read as None and 0. ``error_kind`` is
taken as the daemon attested it: a custom agent's provider claim is ``agent`` there already.

An ``interrupted`` record always says why in ``error_kind``: :data:`STOPPED` (a stop ended its run)
or :data:`CRASHED` (the runner died with it in flight); the daemon's own kind of a stopped run
(``harness``) would read as a failure of ours, which it was not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from srez_client.managed.plan import classify
from srez_client.managed.store import file_sha256
from srez_client.results.finder import read_summary
from srez_daemon.protocol import RunSummary

STOPPED: Final = "stopped"
"""``error_kind`` of an attempt whose run a stop ended (``srez managed stop``, the TUI's stop)."""
CRASHED: Final = "crashed"
"""``error_kind`` of an attempt the runner died with in flight (found by :mod:`.recover`)."""


def summary_cost(summary: RunSummary | None) -> float | None:
    """The run's cost in USD; None when its summary does not know it (an unpriced model)."""
    value = getattr(summary, "cost_usd", None)
    return float(value) if isinstance(value, int | float) and value >= 0 else None


def summary_error_kind(summary: RunSummary | None) -> str | None:
    """``provider``, ``agent``, ``harness`` or None."""
    value = getattr(summary, "error_kind", None)
    return value if isinstance(value, str) else None


def summary_claimed_error_kind(summary: RunSummary | None) -> str | None:
    """The unattested claim of the agent's exit (``provider`` or ``harness``), or None."""
    value = getattr(summary, "claimed_error_kind", None)
    return value if isinstance(value, str) else None


def outcome_fields(
    results_dir: Path, summary: RunSummary | None, *, unknown_cost: float = 0.0
) -> dict[str, object]:
    """The outcome fields of an attempt whose run was mirrored to ``results_dir``.

    A run whose cost is unknown (an unpriced model) is charged ``unknown_cost``, the task's cost
    cap: the budget assumes the worst rather than nothing.
    """
    cost = summary_cost(summary)
    sha = file_sha256(results_dir / "result.json")
    error_kind = summary_error_kind(summary)
    status = classify(
        graded=summary is not None and summary.reward is not None,
        status=summary.status if summary is not None else None,
        error_kind=error_kind,
        has_result=sha is not None,
        end_reason=summary.end_reason if summary is not None else None,
    )
    if status == "interrupted":
        error_kind = STOPPED
    return {
        "status": status,
        "run_id": results_dir.name,
        "results_dir": str(results_dir),
        "result_sha256": sha,
        "reward": summary.reward if summary else None,
        "resolved": summary.resolved if summary else None,
        "passed": summary.passed if summary else None,
        "cost_usd": unknown_cost if cost is None else cost,
        "error_kind": error_kind,
        "claimed_error_kind": summary_claimed_error_kind(summary),
        "error": (summary.error if summary else "no summary.json")
        if status != "completed"
        else None,
    }


def outcome_of(results_dir: Path, *, unknown_cost: float = 0.0) -> dict[str, object]:
    """:func:`outcome_fields` of a results folder read from disk."""
    return outcome_fields(results_dir, read_summary(results_dir), unknown_cost=unknown_cost)
