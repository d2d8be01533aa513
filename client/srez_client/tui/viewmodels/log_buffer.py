"""The logs area: several named logs, each a bounded list of sanitised lines, following its end.

Chunks arrive split anywhere; a partial last line is held until its newline. The view follows
the end unless the reader scrolled up (``follow`` False), and a key jumps back to the bottom.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from srez_client.sanitize import sanitize_line

MAX_LINES: Final = 5000
"""Lines kept per log (the oldest go first)."""


@dataclass(slots=True)
class LogBuffer:
    """One log."""

    name: str
    lines: list[str] = field(default_factory=list)
    partial: str = ""
    dropped: int = 0
    version: int = 0

    def append(self, chunk: str) -> int:
        """Add a chunk; returns how many complete lines it added."""
        parts = (self.partial + chunk).split("\n")
        self.partial = parts.pop()
        self.lines.extend(sanitize_line(p.rstrip("\r")) for p in parts)
        if len(self.lines) > MAX_LINES:
            cut = len(self.lines) - MAX_LINES
            del self.lines[:cut]
            self.dropped += cut
        self.version += 1
        return len(parts)

    def all_lines(self) -> list[str]:
        """The complete lines and the partial one."""
        tail = [sanitize_line(self.partial)] if self.partial else []
        return [*self.lines, *tail]


@dataclass(slots=True)
class Logs:
    """The logs of one run and which one is shown."""

    buffers: dict[str, LogBuffer] = field(default_factory=dict)
    current: str = "agent"
    follow: bool = True

    def buffer(self, name: str) -> LogBuffer:
        """The log ``name`` (made empty on first use)."""
        if name not in self.buffers:
            self.buffers[name] = LogBuffer(name)
        return self.buffers[name]

    def names(self) -> list[str]:
        """Logs known, in a stable order."""
        order = ["agent", "evaluator", "daemon", "container"]
        known = list(self.buffers)
        return [n for n in order if n in known] + sorted(n for n in known if n not in order)

    def next_log(self, step: int = 1) -> str:
        """Show the next log."""
        names = self.names() or [self.current]
        index = names.index(self.current) if self.current in names else 0
        self.current = names[(index + step) % len(names)]
        self.follow = True
        return self.current
