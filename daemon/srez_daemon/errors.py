"""Exceptions of the daemon. Messages are one line: what failed, which value, what to do."""


class DaemonError(Exception):
    """Root of the daemon's errors."""


class SettingsError(DaemonError, ValueError):
    """The environment does not configure a runnable daemon (a variable is missing or bad)."""


class TokenError(DaemonError, PermissionError):
    """The token file is missing, empty or unreadable: the daemon fails closed."""


class RunSetupError(DaemonError, ValueError):
    """``run.json`` is missing or names an unknown task or agent."""
