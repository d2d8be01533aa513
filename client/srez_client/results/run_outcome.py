"""How a run the host grades ended, and the summary it gets (steps 3 and 4 of a host grade).

Pure: from the dialog's closing entry (:func:`closing_entry`) and ``state.json``, the reason an
unfinished episode is force-submitted with (:func:`forced_reason`), the ``error_kind`` its grade
carries (:func:`grade_error_kind`), and its new ``summary.json`` (:func:`host_summary`). See
:mod:`srez_client.results.regrade` for why each is what it is.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from srez_daemon.protocol import (
    DialogEntry,
    Provenance,
    RunManifest,
    RunSummary,
    SessionCompleted,
    SessionFailed,
    SessionTimedOut,
    TokenCount,
    Usage,
)
from srez_daemon.protocol.api import RunState
from srez_env.agents.failures import ErrorKind
from srez_env.grade import Grade

DAEMON_DIED: Final = "the run's daemon died before grading; graded by the host from its transcript"
"""The start of a host-graded run's ``error``."""
NO_EPISODE: Final = "the run's daemon ended without a summary and the host could not grade it"
"""The start of the ``error`` of a run the host found with no summary and no gradeable record."""

ForcedReason = Literal["agent_exit", "time_limit", "step_budget"]
ClosingEntry = SessionCompleted | SessionFailed | SessionTimedOut
"""A dialog entry that closes the agent's session."""


def closing_entry(dialog: list[DialogEntry]) -> ClosingEntry | None:
    """The last entry that closed the agent's session; None if the daemon died before one."""
    return next((e for e in reversed(dialog) if isinstance(e, ClosingEntry)), None)


def forced_reason(state: RunState | None, closing: ClosingEntry | None) -> ForcedReason:
    """The end reason an unfinished episode is force-submitted with.

    The one ``state.json`` recorded once the agent phase ended; else ``time_limit`` after a
    timed-out session; else ``agent_exit`` (the daemon died during the agent phase, where a stop
    would have ended the episode the same way).
    """
    recorded = state.end_reason if state is not None and closing is not None else None
    if recorded in ("agent_exit", "time_limit", "step_budget"):
        return recorded
    if isinstance(closing, SessionTimedOut):
        return "time_limit"
    return "agent_exit"


def grade_error_kind(closing: ClosingEntry | None, state: RunState | None) -> ErrorKind | None:
    """The grade's ``error_kind``, as the daemon would have set it."""
    if closing is None:
        return "harness"  # died in the agent phase: a stop there records the same
    if isinstance(closing, SessionCompleted):
        return None
    if isinstance(closing, SessionTimedOut):
        return "agent"
    if state is not None and state.end_reason == "stopped":
        return "harness"
    error = closing.error or ""
    if error.startswith("the model provider failed"):
        return "provider"
    if error.startswith("the model reached its limit"):
        return "model_limit"
    if error.startswith("the agent refused its configuration"):
        return "harness"
    return "agent"


def host_summary(
    manifest: RunManifest,
    grade: Grade,
    dialog: list[DialogEntry],
    closing: ClosingEntry | None,
    old: RunSummary | None,
) -> RunSummary:
    """The run's ``summary.json`` once the host graded it.

    ``status: error`` and ``error_kind: harness`` (the daemon died), ``graded_by: host``, with the
    errors recorded before (``old`` is the summary the run had, if any, whose timing it keeps).
    """
    before = [e for e in (closing.error if closing else None, old.error if old else None) if e]
    error = DAEMON_DIED + "".join(f" (before that: {e})" for e in dict.fromkeys(before))
    last_ts = dialog[-1].ts if dialog else manifest.started_at
    usage = next((e for e in reversed(dialog) if isinstance(e, Usage)), None)
    duration = _seconds_between(manifest.started_at, last_ts)
    return RunSummary(
        run_id=manifest.run_id,
        task_id=manifest.task_id,
        agent=manifest.agent,
        model=manifest.model,
        status="error",
        reward=grade.reward.total,
        resolved=grade.resolved,
        passed=grade.passed,
        steps=grade.steps,
        end_reason=grade.metrics.end_reason,
        duration_s=old.duration_s if old else duration,
        finished_at=old.finished_at if old else last_ts,
        error=error,
        error_kind="harness",
        claimed_error_kind=old.claimed_error_kind if old else None,
        cost_usd=usage.cost_usd if usage else (old.cost_usd if old else 0.0),
        tokens=usage.tokens if usage else (old.tokens if old else TokenCount()),
        graded_by="host",
        provenance=Provenance.of(manifest, grade.schema_version),
    )


def _seconds_between(start: str, end: str) -> float:
    try:
        a = datetime.fromisoformat(start.replace("Z", "+00:00"))
        b = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return round(max(0.0, (b - a).total_seconds()), 3)


def ungraded_summary(manifest: RunManifest, why: str, finished_at: str) -> RunSummary:
    """The ``summary.json`` the host writes for a run that has none and that it cannot grade (a
    daemon that died before its episode started, or on a full disk): an error of the harness,
    not graded, ``graded_by: host``, saying why. A folder under its final name then always holds
    a summary, and the run counts as a harness failure (re-run by ``--resume``)."""
    return RunSummary(
        run_id=manifest.run_id,
        task_id=manifest.task_id,
        agent=manifest.agent,
        model=manifest.model,
        status="error",
        reward=None,
        resolved=None,
        passed=None,
        steps=None,
        duration_s=max(0.0, _seconds_between(manifest.started_at, finished_at)),
        finished_at=finished_at,
        error=f"{NO_EPISODE}: {why}",
        error_kind="harness",
        graded_by="host",
        provenance=Provenance.of(manifest, None),
    )
