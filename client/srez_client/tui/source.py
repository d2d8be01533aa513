"""One interface for a run the viewer shows, live (through its daemon) or finished (a results
folder, no daemon), so every panel is written once and works for both.

Events are the daemon's stream frames, with dialog entries batched (:class:`DialogBatch`): a
finished run delivers its whole dialog in a few batches, a live run one entry at a time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from srez_daemon.protocol import DialogEntry
from srez_daemon.protocol.api import DiffFrame, GradeFrame, PhaseFrame


@dataclass(frozen=True, slots=True)
class DialogBatch:
    """Dialog entries in file order."""

    entries: list[DialogEntry]


SourceEvent = DialogBatch | PhaseFrame | DiffFrame | GradeFrame


@dataclass(frozen=True, slots=True)
class RunMeta:
    """What the top bar and "More details" show (raw: the widgets sanitise)."""

    run_id: str
    task_id: str = ""
    title: str = ""
    difficulty: str = ""
    brief: str = ""
    model: str = ""
    agent: str = ""
    backend: str = ""
    phase: str = ""
    version: str = ""
    steps_used: int | None = None
    step_budget: int | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    """Run settings (seed, time limit, agent spec ...), name to value."""


class SourceUnavailable(Exception):
    """The part asked for does not exist (yet) for this run; the message says why."""


class RunSource(ABC):
    """A run as the viewer reads it. Methods raise :class:`SourceUnavailable` for what is not
    there, and :class:`srez_client.errors.ClientError` for a daemon that fails."""

    run_id: str
    live: bool = False
    """Whether the run may still change (a daemon serves it)."""

    async def connect(self, status: Callable[[str], None] | None = None) -> None:  # noqa: B027
        """Open what the source needs (finished runs need nothing); ``status`` hears progress
        lines such as "Starting… waiting for the daemon"."""

    @abstractmethod
    async def meta(self) -> RunMeta:
        """The run's metadata."""

    @abstractmethod
    def events(self) -> AsyncIterator[SourceEvent]:
        """Dialog batches and phase, diff and grade frames until the run ends."""

    @abstractmethod
    async def diff(self) -> str:
        """The agent's diff (live: as it is now)."""

    async def diff_head(self, most: int) -> tuple[str, int]:
        """The agent's diff for a viewer: its first ``most`` bytes or so, cut where a file
        starts, and how many bytes were left out (0: all of it)."""
        return await self.diff(), 0

    @abstractmethod
    async def reference(self) -> tuple[str, float | None]:
        """The reference patch and the similarity; SourceUnavailable during the agent phase."""

    @abstractmethod
    async def grade(self) -> dict[str, Any]:
        """``result.json``; SourceUnavailable until graded."""

    @abstractmethod
    async def summary(self) -> dict[str, Any]:
        """``summary.json``; SourceUnavailable until written."""

    @abstractmethod
    def log_names(self) -> list[str]:
        """The logs this run has."""

    @abstractmethod
    def logs(self, name: str, *, follow: bool) -> AsyncIterator[str]:
        """A log as text chunks (following a live run's log if asked)."""

    @abstractmethod
    async def dialog_bytes(self) -> bytes:
        """The dialog file as it is now (for "save as dialog.jsonl")."""

    async def terminal(self) -> bool:
        """Whether a pty can be opened (finished runs: never)."""
        return False

    async def pty(self, cols: int, rows: int) -> Any:
        """An open pty WebSocket.

        Raises:
            SourceUnavailable: If the run offers no terminal.
        """
        msg = "a finished run has no terminal"
        raise SourceUnavailable(msg)

    async def close(self) -> None:  # noqa: B027 - optional
        """Release connections."""
