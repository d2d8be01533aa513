"""Exceptions of the client package.

Messages are one line that says what failed, which value caused it and what to do, so the command
line prints them as they are.

Errors of a daemon's API map its closed error codes (``srez_daemon.protocol.api.ErrorCode``) to
one class per family, each also deriving from the builtin a caller would naturally catch:

========================================  ==========================================
daemon code                               class
========================================  ==========================================
``unauthorized``, ``forbidden(_host)``    :class:`DaemonAuthError` (PermissionError)
``not_found``, ``no_grade``               :class:`DaemonNotFoundError` (LookupError)
``agent_phase``, ``conflict``             :class:`DaemonConflictError`
``bad_request``, ``payload_too_large``,
``method_not_allowed``                    :class:`DaemonRequestError` (ValueError)
``too_many_sessions``, ``unavailable``    :class:`DaemonBusyError`
``internal`` and anything unknown         :class:`DaemonAPIError`
========================================  ==========================================
"""

from __future__ import annotations


class ClientError(Exception):
    """Root of every error raised by :mod:`srez_client`."""


class UsageError(ClientError, ValueError):
    """A command-line argument or option value is not acceptable."""


class ResultsError(ClientError):
    """A results folder cannot be created or completed (bad name, already exists)."""


class MirrorError(ClientError, OSError):
    """A run folder cannot be mirrored into ``results/`` (unreadable source, bad names)."""


class RegradeError(ClientError):
    """A run cannot be graded on the host: no transcript, an unknown task, or a transcript that
    does not replay line for line (:mod:`srez_client.results.regrade`)."""


class BackendError(ClientError):
    """A backend cannot do what was asked (the daemon did not start, the state is unreadable)."""


class RunNotFoundError(BackendError, LookupError):
    """No run of this backend has the given id (or the prefix matches none or several)."""


class AmbiguousRunError(RunNotFoundError):
    """A run-id prefix matches several runs (the message lists some of them)."""


class NotOwnedError(BackendError, PermissionError):
    """The run was not launched from this state (owner or nonce differ); pass ``--any`` to act."""


class NoDaemonError(BackendError):
    """The run has no daemon to talk to (``inline`` runs, or a run that never started)."""


class DaemonUnreachableError(ClientError, ConnectionError):
    """The daemon's endpoint does not answer (refused, reset or timed out)."""


class DaemonAPIError(ClientError):
    """The daemon answered with an error body ``{"error": {"code", "message"}}``.

    Attributes:
        code: The daemon's error code (its closed set), or ``http_<status>`` when the body was
            not an error body.
        message: The daemon's one-line message.
        status: The HTTP status.
    """

    def __init__(self, code: str, message: str, status: int) -> None:
        """Keep the code, message and status; the text is ``<code> (<status>): <message>``."""
        super().__init__(f"daemon answered {code} ({status}): {message}")
        self.code = code
        self.message = message
        self.status = status


class DaemonAuthError(DaemonAPIError, PermissionError):
    """``unauthorized`` (wrong or missing token), ``forbidden_host``, or ``forbidden`` (exec or
    pty without the admin claim)."""


class DaemonNotFoundError(DaemonAPIError, LookupError):
    """``not_found``, or ``no_grade`` (the run is not graded yet)."""


class DaemonConflictError(DaemonAPIError):
    """``agent_phase`` (refused while the agent acts) or ``conflict``."""


class DaemonRequestError(DaemonAPIError, ValueError):
    """``bad_request``, ``payload_too_large`` or ``method_not_allowed``: the request is wrong."""


class DaemonBusyError(DaemonAPIError):
    """``too_many_sessions`` or ``unavailable``: try again later."""


def daemon_api_error(code: str, message: str, status: int) -> DaemonAPIError:
    """The exception for a daemon error code (see the table in the module docstring).

    Args:
        code: The error code of the body.
        message: Its message.
        status: The HTTP status of the response.

    Returns:
        An instance of the class of the code's family.
    """
    cls: type[DaemonAPIError]
    match code:
        case "unauthorized" | "forbidden_host" | "forbidden":
            cls = DaemonAuthError
        case "not_found" | "no_grade":
            cls = DaemonNotFoundError
        case "agent_phase" | "conflict":
            cls = DaemonConflictError
        case "bad_request" | "payload_too_large" | "method_not_allowed":
            cls = DaemonRequestError
        case "too_many_sessions" | "unavailable":
            cls = DaemonBusyError
        case _:
            cls = DaemonAPIError
    return cls(code, message, status)


def some_of(names: list[str], shown: int = 5) -> str:
    """``names`` for a one-line message: the first ``shown``, then how many more (an ambiguous
    prefix may match hundreds of runs, and the line must stay one line)."""
    head = ", ".join(names[:shown])
    rest = len(names) - shown
    return f"{head} and {rest} more" if rest > 0 else head
