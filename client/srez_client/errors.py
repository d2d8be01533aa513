"""Exceptions of the client package.

Messages are one line that says what failed, which value caused it and what to do, so the command
line prints them as they are.
"""


class ClientError(Exception):
    """Root of every error raised by :mod:`srez_client`."""


class UsageError(ClientError, ValueError):
    """A command-line argument or option value is not acceptable."""


class ResultsError(ClientError):
    """A results folder cannot be created or completed (bad name, already exists)."""
