"""Exceptions of the daemon. Messages are one line: what failed, which value, what to do."""

from typing import Literal

NoteCode = Literal["bad_request", "payload_too_large", "too_many_notes"]


class DaemonError(Exception):
    """Root of the daemon's errors."""


class SettingsError(DaemonError, ValueError):
    """The environment does not configure a runnable daemon (a variable is missing or bad)."""


class TokenError(DaemonError, PermissionError):
    """The token file is missing, empty or unreadable: the daemon fails closed."""


class RunSetupError(DaemonError, ValueError):
    """``run.json`` is missing or names an unknown task or agent."""


class RecordError(DaemonError, OSError):
    """A run file could not be written (disk full, I/O error): what was being written, the file
    and the system's reason. The file is left at its last whole line; the run ends as a harness
    error."""


class NoteRefused(DaemonError, ValueError):
    """An agent note was refused and not recorded: ``code`` is the wire error code
    (``bad_request``, ``payload_too_large``, ``too_many_notes``)."""

    def __init__(self, code: NoteCode, message: str) -> None:
        super().__init__(message)
        self.code: NoteCode = code
        self.message = message
