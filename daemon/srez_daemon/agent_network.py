"""The agent's network in a container (``SREZ_AGENT_NETWORK=none``; docs/security.md §5.1).

On ``docker`` the daemon and the agent share the container's network namespace: the daemon
needs the bridge (the host reaches it through its published port, and it reaches the host's
model relay), and the agent would have it too: the internet, every service of the host through
the bridge's gateway, and every other container on the bridge. Docker's default confinement
gives no way to put one process of a container into a network namespace of its own (creating
one needs ``CAP_SYS_ADMIN``, and its seccomp profile refuses user namespaces), so the agent is
cut off by its user instead: a policy-routing rule, set by the daemon before the agent starts,
makes every route lookup of the agent's uid fail (``prohibit``: ``EACCES`` at ``connect``,
``sendto``), IPv4 and IPv6. Lookups that the ``local`` table answers first (the container's own
loopback and addresses) still succeed, so the agent reaches what is inside its container and
nothing outside it. The rule needs ``CAP_NET_ADMIN`` over the container's own network namespace,
which the docker backend grants; the agent, started under its own uid, holds no capability.

A built-in model agent (``llm``, ``llm-json``) reaches its model relay the way it does in the
``local`` sandbox: through a unix socket the daemon forwards (:mod:`srez_daemon.model_forward`),
owned by the agent's user. A custom agent given a model keeps its routes (it calls its provider
itself, as on the host), as on ``local``.

If the rule cannot be set the agent does not start and the run ends as a harness error: an
agent never runs with more network than its settings say.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

MODES: Final = ("host", "none")
"""``SREZ_AGENT_NETWORK``: ``host`` (the default) leaves the agent the daemon's network; ``none``
takes every route from the agent's user."""
RULE_PRIORITY: Final = 100
"""Before the ``main`` table (32766), after ``local`` (0): what is inside the container stays."""
NETLINK_ROUTE: Final = 0
RTM_NEWRULE: Final = 32
NLMSG_ERROR: Final = 2
NLM_F_REQUEST: Final = 0x1
NLM_F_ACK: Final = 0x4
NLM_F_EXCL: Final = 0x200
NLM_F_CREATE: Final = 0x400
FRA_PRIORITY: Final = 6
FRA_UID_RANGE: Final = 20
FR_ACT_PROHIBIT: Final = 8
"""From ``linux/netlink.h``, ``linux/rtnetlink.h`` and ``linux/fib_rules.h``."""
MODEL_SOCKET_NAME: Final = "model.sock"
"""The forwarded model socket, beside the agent socket (a folder the agent's user can enter)."""


class RoutesError(OSError):
    """The agent's routes could not be taken: the agent must not start."""


@dataclass(frozen=True, slots=True)
class ContainedNetwork:
    """How one agent is cut off inside its container."""

    uid: int
    """The agent's user: the rule names it."""
    gid: int
    model_socket: Path | None = None
    """Where the agent finds its model relay (a unix socket owned by the agent's user)."""
    model_target: tuple[str, int] | None = None
    """The relay's address, which the daemon forwards :attr:`model_socket` to."""

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """The agent's environment: its way to the relay, when it has one."""
        out = dict(env)
        if self.model_socket is not None:
            out["SREZ_LLM_SOCKET"] = str(self.model_socket)
        return out


def relay_target(environ: Mapping[str, str]) -> tuple[str, int] | None:
    """The ``(host, port)`` of ``SREZ_LLM_API_BASE`` when it is plain HTTP (a launcher's model
    relay), else None."""
    try:
        url = urlsplit(environ.get("SREZ_LLM_API_BASE", ""))
        port = url.port or 80
    except ValueError:
        return None
    if url.scheme != "http" or not url.hostname:
        return None
    return url.hostname, port


def contained_network(
    *,
    uid: int,
    gid: int,
    builtin_networked: bool | None,
    model: str,
    socket_folder: Path,
    environ: Mapping[str, str],
) -> ContainedNetwork | None:
    """The agent's cut-off network, or None when it keeps its routes: a custom agent
    (``builtin_networked`` None) given a model calls its provider itself. A built-in model agent
    gets the forwarded socket when its relay is plain HTTP."""
    if builtin_networked is None and model not in ("", "none"):
        return None
    target = relay_target(environ) if builtin_networked else None
    return ContainedNetwork(
        uid=uid,
        gid=gid,
        model_socket=socket_folder / MODEL_SOCKET_NAME if target is not None else None,
        model_target=target,
    )


def rule_message(family: int, uid: int, seq: int = 1) -> bytes:
    """The ``RTM_NEWRULE`` netlink request: ``priority`` :data:`RULE_PRIORITY`, ``uidrange``
    ``uid``-``uid``, action ``prohibit``, acknowledged, refused if it exists."""
    attributes = _attribute(FRA_PRIORITY, struct.pack("=I", RULE_PRIORITY)) + _attribute(
        FRA_UID_RANGE, struct.pack("=II", uid, uid)
    )
    # struct fib_rule_hdr: family, dst_len, src_len, tos, table, res1, res2, action; flags
    body = struct.pack("=8BI", family, 0, 0, 0, 0, 0, 0, FR_ACT_PROHIBIT, 0) + attributes
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
    return struct.pack("=IHHII", 16 + len(body), RTM_NEWRULE, flags, seq, 0) + body


def _attribute(kind: int, payload: bytes) -> bytes:
    size = 4 + len(payload)
    return struct.pack("=HH", size, kind) + payload + b"\0" * (-size % 4)


def acknowledged_error(reply: bytes) -> int:
    """The errno of a netlink acknowledgement (0: done).

    Raises:
        RoutesError: ``reply`` is not an acknowledgement.
    """
    if len(reply) < 20:
        msg = f"a netlink reply of {len(reply)} bytes is no acknowledgement"
        raise RoutesError(msg)
    _length, kind = struct.unpack_from("=IH", reply)
    if kind != NLMSG_ERROR:
        msg = f"a netlink reply of type {kind} is no acknowledgement"
        raise RoutesError(msg)
    (error,) = struct.unpack_from("=i", reply, 16)
    return -int(error)


def refuse_routes(uid: int) -> None:
    """Adds the ``prohibit`` rule for ``uid``, IPv4 and IPv6 (a rule already there is kept; a
    kernel without IPv6 has no IPv6 route to take).

    One netlink request per family, built here (:func:`rule_message`) rather than with a netlink
    library: pyroute2 would add 0.2 to 0.45 s of imports to every docker run's start for two
    48-byte messages.

    Raises:
        RoutesError: The rule could not be added (no ``CAP_NET_ADMIN``, no netlink).
    """
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE) as nl:
            nl.settimeout(5.0)
            for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), start=1):
                nl.send(rule_message(family, uid, seq))
                code = acknowledged_error(nl.recv(65536))
                if code in (0, errno.EEXIST):  # EEXIST: an earlier start in this container
                    continue
                if family == socket.AF_INET6 and code == errno.EAFNOSUPPORT:
                    continue  # no IPv6: no IPv6 route to take
                raise OSError(code, os.strerror(code))
    except OSError as e:
        msg = (
            f"could not take the agent's routes (uid {uid}): {e}; the container needs"
            " CAP_NET_ADMIN (docker run --cap-add NET_ADMIN; the docker backend adds it), or set"
            " SREZ_AGENT_NETWORK=host to leave the agent the container's network"
        )
        raise RoutesError(msg) from e
