"""The short table a command ends with: what it did, per agent (``srez eval``) or per target
(``srez managed run``). Pure: no I/O.

Columns: runs, resolved, mean reward (over the graded runs), errors (runs that ended with an
error, plus runs that could not be run at all).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from srez_client.results.report import agent_label
from srez_client.results.table import render_table
from srez_daemon.protocol import RunSummary


def run_row(
    summary: RunSummary | None, *, task_id: str, agent: str, seed: int | None, run_dir: Path
) -> dict[str, object]:
    """The row of one run in ``srez eval``'s runs (and ``--json``), whatever ran it: one
    function, so a backend cannot leave out a column the tally counts. A run with no summary
    counts as an error. ``provenance`` is the summary's (None when it has none)."""
    return {
        "task_id": task_id,
        "agent": summary.agent if summary else agent,
        "model": summary.model if summary else None,
        "run_seed": seed,
        "status": summary.status if summary else "error",
        "reward": summary.reward if summary else None,
        "resolved": summary.resolved if summary else None,
        "run_dir": str(run_dir),
        "provenance": summary.provenance.model_dump(mode="json")
        if summary and summary.provenance
        else None,
    }


@dataclass(slots=True)
class TallyRow:
    """One agent's (or target's) count."""

    label: str
    runs: int = 0
    resolved: int = 0
    rewards: tuple[float, ...] = ()
    errors: int = 0

    @property
    def mean_reward(self) -> float | None:
        """Mean over the graded runs, None when none was graded."""
        return sum(self.rewards) / len(self.rewards) if self.rewards else None


HEADERS = ("agent", "runs", "resolved", "mean reward", "errors")


def tally_runs(
    rows: Sequence[Mapping[str, object]], failed: Mapping[str, int] | None = None
) -> list[TallyRow]:
    """Count the rows of ``srez eval`` (``agent``, ``model``, ``status``, ``reward``,
    ``resolved``) per agent label; ``failed``: label -> runs that could not be run."""
    out: dict[str, TallyRow] = {}
    for row in rows:
        label = agent_label(str(row.get("agent", "?")), str(row.get("model") or "none"))
        entry = out.setdefault(label, TallyRow(label))
        entry.runs += 1
        entry.resolved += row.get("resolved") is True
        reward = row.get("reward")
        if isinstance(reward, int | float):
            entry.rewards = (*entry.rewards, float(reward))
        entry.errors += row.get("status") == "error"
    for label, count in (failed or {}).items():
        entry = out.setdefault(label, TallyRow(label))
        entry.runs += count
        entry.errors += count
    return [out[k] for k in sorted(out)]


def tally_table(rows: Sequence[TallyRow], first: str = "agent") -> str:
    """The table: one line per row, ``first`` naming the first column."""
    cells = [
        [
            r.label,
            str(r.runs),
            str(r.resolved),
            "-" if r.mean_reward is None else f"{r.mean_reward:.3f}",
            str(r.errors),
        ]
        for r in rows
    ]
    return render_table([first, *HEADERS[1:]], cells, right=[1, 2, 3, 4])
