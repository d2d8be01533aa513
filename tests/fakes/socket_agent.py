"""Test agents written as small scripts that speak the agent socket (docs/design.md §5).

:func:`agent_script` puts a test's own lines after :data:`CLIENT`, a standard-library client whose
``call(method, path, body=None)`` sends one request to ``$SREZ_AGENT_SOCKET`` and returns
``(status, body)``; ``json``, ``os``, ``sys`` and ``time`` are imported for the test's lines.
"""

from __future__ import annotations

import textwrap
from typing import Final

CLIENT: Final = """\
import http.client, json, os, socket, sys, time


class UnixConnection(http.client.HTTPConnection):
    def __init__(self):
        super().__init__("agent")

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(os.environ["SREZ_AGENT_SOCKET"])


def call(method, path, body=None):
    conn = UnixConnection()
    payload = None if body is None else json.dumps(body)
    conn.request(method, path, payload, {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


"""


def agent_script(lines: str) -> str:
    """A whole agent program: the socket client, then ``lines`` (dedented)."""
    return CLIENT + textwrap.dedent(lines).lstrip("\n")
