"""The per-target logs of a managed run: ``console.log`` and ``runner.log``.

``console.log`` gets what a person watching the runner would read (one line per task, pauses,
re-runs), also echoed to the runner's stderr; ``runner.log`` gets the log records of the whole
client (``srez_client.*``: launches, mirrors, warnings) while the target runs. Both are appended
to, never truncated, so the history of every resume stays readable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from srez_client.sanitize import sanitize_line


def now_iso() -> str:
    """The current UTC time, ISO-8601 with milliseconds (``...Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TargetLogs:
    """Opens a target's two logs for the time it runs (a context manager)."""

    def __init__(self, folder: Path, echo: Callable[[str], None]) -> None:
        """Log into ``folder`` (created), echoing console lines to ``echo``."""
        self.folder = folder
        self.echo = echo
        self._console: IO[str] | None = None
        self._handler: logging.Handler | None = None
        self._level = logging.NOTSET

    def __enter__(self) -> Self:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._console = (self.folder / "console.log").open("a", encoding="utf-8")
        handler = logging.FileHandler(self.folder / "runner.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.setLevel(logging.INFO)
        client = logging.getLogger("srez_client")
        self._level = client.level
        if client.getEffectiveLevel() > logging.INFO:
            client.setLevel(logging.INFO)  # for runner.log; _quiet keeps stderr as it was
        client.addHandler(handler)
        self._handler = handler
        for other in logging.getLogger().handlers:
            other.addFilter(self._quiet)
        return self

    def _quiet(self, record: logging.LogRecord) -> bool:
        """Keep the INFO records meant for ``runner.log`` off the other handlers (stderr),
        unless the root logger asked for them (``-v``)."""
        return record.levelno >= logging.getLogger().getEffectiveLevel()

    def say(self, line: str) -> None:
        """One console line (control characters from task or agent text are neutralised)."""
        text = sanitize_line(line)
        if self._console is not None:
            self._console.write(f"{now_iso()} {text}\n")
            self._console.flush()
        self.echo(text)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._handler is not None:
            client = logging.getLogger("srez_client")
            client.removeHandler(self._handler)
            client.setLevel(self._level)
            self._handler.close()
        for other in logging.getLogger().handlers:
            other.removeFilter(self._quiet)
        if self._console is not None:
            self._console.close()
