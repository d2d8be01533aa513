"""Exceptions of the benchmark package.

Every message is one line that says what was wrong, which value caused it and what is allowed,
so the command line can print it as it is.
"""


class EnvError(Exception):
    """Root of every error raised by :mod:`srez_env`."""


class TaskError(EnvError, ValueError):
    """A task file is missing, malformed or fails validation, or a task id is unknown."""


class ReplayError(EnvError, ValueError):
    """A replay file (one JSON action per line) is malformed; the message names the line."""


class ConfError(EnvError, ValueError):
    """A restricted-INI configuration text does not parse."""


class EpisodeError(EnvError, RuntimeError):
    """The environment was used out of order (stepped before reset, graded before the end)."""
