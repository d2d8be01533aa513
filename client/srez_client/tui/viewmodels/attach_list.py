"""The list of runs one can attach to: tabs, filter as you type, recently attached first.

Rows come from two places: live backends (running, or exited with their state kept) and the
results folder (finished runs, read with no daemon). A row's state is about the episode, not the
process: ``finished`` once the run wrote its summary (graded, or failed), whether it is read from
the results or from a ``keep`` run's daemon that still serves; ``exited`` for a process gone
before that (stopped or crashed mid-run). So a run has one label wherever it is read from, and
the Finished and Exited tabs keep results apart from runs that ended early. The model is pure:
the screen hands it rows and keys; :mod:`srez_client.tui.recent` persists the Recent list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from srez_client.sanitize import sanitize_line

Tab = Literal["running", "finished", "exited", "all", "recent"]
TABS: Final[tuple[Tab, ...]] = ("running", "finished", "exited", "all", "recent")
TAB_TITLES: Final[dict[Tab, str]] = {
    "running": "Running",
    "finished": "Finished",
    "exited": "Exited",
    "all": "All",
    "recent": "Recent",
}
RunState = Literal["running", "exited", "finished"]
RECENT_MAX: Final = 10
"""How many recently attached runs are remembered."""


@dataclass(frozen=True, slots=True)
class AttachRow:
    """One run in the list. ``ref`` is what :meth:`Shell.open_run` takes (a run id, or a results
    folder for finished runs)."""

    run_id: str
    task_id: str
    model: str
    agent: str
    state: RunState
    ref: str
    image: str = ""
    backend: str = ""
    serving: bool = False
    """Its daemon answers (a live run, or a ``keep`` run after its episode): attaching to it
    gives the live reads and the terminal, so this row wins over the run's results folder."""

    def cells(self) -> list[str]:
        """The row as display cells, sanitised (labels and names are untrusted)."""
        values = [self.run_id, self.task_id, self.model, self.agent, self.state, self.backend]
        return [sanitize_line(v) for v in values]

    def haystack(self) -> str:
        """What the filter searches: task, model, agent, image, run id."""
        return " ".join((self.task_id, self.model, self.agent, self.image, self.run_id)).lower()


def handle_state(status: str, finished: bool) -> RunState:
    """The state of a run a backend lists: its ``status`` (process) and ``finished`` (summary)."""
    if finished:
        return "finished"
    return "running" if status == "running" else "exited"


def merge_rows(live: Iterable[AttachRow], finished: Iterable[AttachRow]) -> list[AttachRow]:
    """Live rows and finished rows, one per run id: a run whose daemon serves wins over its
    mirror, a mirror over a stopped process."""
    seen: dict[str, AttachRow] = {}
    for row in finished:
        seen[row.run_id] = row
    for row in live:
        if row.serving or row.run_id not in seen:
            seen[row.run_id] = row
    return sorted(seen.values(), key=lambda r: r.run_id, reverse=True)


def push_recent(recent: Sequence[str], run_id: str) -> list[str]:
    """``recent`` with ``run_id`` moved to the front, at most :data:`RECENT_MAX` long."""
    return [run_id, *(r for r in recent if r != run_id)][:RECENT_MAX]


@dataclass(slots=True)
class AttachList:
    """Rows, the current tab and filter, and the Recent list."""

    rows: list[AttachRow] = field(default_factory=list)
    recent: list[str] = field(default_factory=list)
    tab: Tab = "all"
    query: str = ""

    def _tab_rows(self, tab: Tab) -> list[AttachRow]:
        if tab == "recent":
            by_id = {r.run_id: r for r in self.rows}
            return [by_id[i] for i in self.recent if i in by_id]
        if tab == "all":
            return list(self.rows)
        return [r for r in self.rows if r.state == tab]

    def visible(self) -> list[AttachRow]:
        """The rows the current tab and filter show (Recent: most recent first)."""
        words = self.query.lower().split()
        return [r for r in self._tab_rows(self.tab) if all(w in r.haystack() for w in words)]

    def counts(self) -> dict[Tab, int]:
        """How many rows each tab holds (before the filter)."""
        return {tab: len(self._tab_rows(tab)) for tab in TABS}

    def next_tab(self, step: int = 1) -> Tab:
        """Move to the next (or previous) tab."""
        self.tab = TABS[(TABS.index(self.tab) + step) % len(TABS)]
        return self.tab

    def type_char(self, char: str) -> None:
        """Add a character to the filter."""
        self.query += char

    def backspace(self) -> None:
        """Remove the filter's last character."""
        self.query = self.query[:-1]

    def attached(self, run_id: str) -> None:
        """Record that ``run_id`` was opened (for the Recent tab)."""
        self.recent = push_recent(self.recent, run_id)
