"""The wire between a ``local`` launcher and its run template (:mod:`srez_daemon.template`).

One ``AF_UNIX`` ``SOCK_SEQPACKET`` socket pair joins them: the launcher keeps one end, the
template gets the other as file descriptor :data:`CHANNEL_FD`. A socket pair has no name on any
file system, so no other process can connect to the template, and message boundaries hold
(one ``sendmsg`` is one message). Every message is one JSON object:

* template -> launcher, once, when it is ready: ``{"ready": <its pid>}``;
* launcher -> template, per run: ``{"args": [...], "env": {...}, "cwd": "..."}`` carrying two file
  descriptors (``SCM_RIGHTS``): the read end of the run's *go* pipe and the run's output file
  (``daemon.out``, opened for appending);
* template -> launcher: ``{"pid": <the run daemon's pid>}``, or ``{"error": "<why>"}``.

The forked run waits on its go pipe before it does anything of the run: the launcher writes one
byte (:data:`GO`) once it knows the pid. If the template dies between the fork and its answer,
the launcher never learns the pid and closes the pipe; the fork reads end-of-file and exits
without having touched the run, so the launcher's fresh start is the run's only daemon.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any, Final

CHANNEL_FD: Final = 3
"""The template's end of the socket pair, where the launcher puts it."""
GO: Final = b"\x01"
"""What the launcher writes to a forked run's go pipe to let it start."""
MAX_MESSAGE: Final = 1 << 20
"""Largest message either side reads (an environment is a few KiB)."""
MODULE: Final = "srez_daemon.template"
"""What the launcher runs with ``python -m``."""


def send(channel: socket.socket, message: Mapping[str, Any], fds: Sequence[int] = ()) -> None:
    """Send one message, with ``fds`` attached."""
    data = json.dumps(message, separators=(",", ":")).encode()
    socket.send_fds(channel, [data], list(fds))


def receive(channel: socket.socket, max_fds: int = 0) -> tuple[dict[str, Any], list[int]]:
    """Receive one message and the descriptors attached to it.

    Raises:
        EOFError: The other end is closed.
        ValueError: The message is not a JSON object.
    """
    data, fds, _flags, _address = socket.recv_fds(channel, MAX_MESSAGE, max_fds)
    if not data:
        for fd in fds:
            _close(fd)
        raise EOFError
    try:
        message = json.loads(data)
    except ValueError:
        message = None
    if not isinstance(message, dict):
        for fd in fds:
            _close(fd)
        msg = f"a run template message is not a JSON object: {data[:80]!r}"
        raise ValueError(msg)
    return message, fds


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
