"""What a run folder holds and how much: where each file lives (docs/design.md §7) and the caps on
the agent's notes.

Light on purpose (no models, no simulator): the daemon's settings read it before the daemon
answers its first request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

NOTES_MAX_BYTES: Final = 64 << 20
"""Bytes of dialog lines all of a run's notes may take (``SREZ_NOTES_MAX_BYTES``)."""
NOTES_MAX_COUNT: Final = 10_000
"""Notes one run records at most (``SREZ_NOTES_MAX_COUNT``)."""
AGENT_LOG_MAX_BYTES: Final = 16 << 20
"""Bytes of the agent's stdout and stderr kept in ``logs/agent.log`` (``SREZ_AGENT_LOG_MAX_BYTES``)."""
NOTE_MAX_BYTES: Final = 1 << 20  # protocol.dialog.MAX_LINE_BYTES: a longer line is unreadable
"""The longest line one note may take (``SREZ_NOTE_MAX_BYTES``)."""


@dataclass(frozen=True, slots=True)
class NoteLimits:
    """Caps on the agent's notes in one run (``SREZ_NOTES_MAX_BYTES`` and friends)."""

    max_bytes: int = NOTES_MAX_BYTES
    """Bytes of dialog lines all notes may take."""
    max_count: int = NOTES_MAX_COUNT
    """Notes recorded at most."""
    max_note_bytes: int = NOTE_MAX_BYTES
    """The longest line one note may take (a longer note alone is refused)."""


DEFAULT_NOTE_LIMITS: Final = NoteLimits()
"""The caps when the host sets none."""


@dataclass(frozen=True, slots=True)
class RunPaths:
    """Where each file of a run lives inside its run folder (docs/design.md §7)."""

    root: Path

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def state_json(self) -> Path:
        return self.root / "state.json"

    @property
    def archive(self) -> Path:
        return self.root / "archive"

    @property
    def dialog(self) -> Path:
        return self.archive / "dialog.jsonl"

    @property
    def transcript(self) -> Path:
        return self.archive / "transcript.jsonl"

    @property
    def world(self) -> Path:
        return self.root / "world"

    def conf(self, service: str) -> Path:
        return self.world / service / f"{service}.conf"

    @property
    def final_patch(self) -> Path:
        return self.root / "final.patch"

    @property
    def reference_patch(self) -> Path:
        return self.root / "reference.patch"

    @property
    def result_json(self) -> Path:
        return self.root / "result.json"

    @property
    def summary_json(self) -> Path:
        return self.root / "summary.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def log(self, name: str) -> Path:
        """``logs/<name>.log`` for name in agent, evaluator, daemon."""
        return self.logs / f"{name}.log"
