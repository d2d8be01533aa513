"""What the engine says about a container, read without trusting it (docs/security.md A4, A5).

Pure: a container as listed or inspected (:class:`SeenContainer`), the port the daemon is
published on (:func:`published_port`, loopback only), the file-mode bits of an archive's stat
header (:func:`is_folder`, :func:`is_regular`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from srez_client.backends.base import RunStatus

DAEMON_PORT: Final = "4263/tcp"
"""The daemon's port inside the container (docs/design.md §4)."""

# Go's os.FileMode type bits, as the engine reports them in an archive's stat header
_GO_DIR: Final = 1 << 31
_GO_TYPE_BITS: Final = (
    (1 << 31) | (1 << 27) | (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (1 << 19)
)
"""Dir, symlink, device, named pipe, socket, char device, irregular."""
_LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True, slots=True)
class SeenContainer:
    """What the engine says about one container, from a listing or an inspect."""

    id: str
    name: str
    labels: dict[str, str]
    state: str
    """The engine's state: ``created``, ``running``, ``paused``, ``exited`` ..."""
    created: str
    """Creation time as the engine gave it (sortable within one form)."""

    @property
    def run_id(self) -> str:
        """The ``srez.run`` label."""
        return self.labels.get("srez.run", "")

    @property
    def status(self) -> RunStatus:
        """``running`` while its processes exist (paused and restarting included)."""
        return run_status(self.state)


def seen_from_attrs(attrs: Mapping[str, Any]) -> SeenContainer:
    """A container from a listing (``Names``, ``Labels``, ``State`` as a string) or an inspect
    (``Name``, ``Config.Labels``, ``State.Status``)."""
    state = attrs.get("State")
    if isinstance(state, Mapping):
        labels = (attrs.get("Config") or {}).get("Labels") or {}
        name = str(attrs.get("Name", ""))
        status = str(state.get("Status", ""))
    else:
        labels = attrs.get("Labels") or {}
        names = attrs.get("Names") or [""]
        name = str(names[0])
        status = str(state or "")
    return SeenContainer(
        id=str(attrs.get("Id", "")),
        name=name.removeprefix("/"),
        labels={str(k): str(v) for k, v in labels.items()},
        state=status,
        created=str(attrs.get("Created", "")),
    )


def run_status(state: str) -> RunStatus:
    """``running`` while the container's processes exist (paused and restarting included)."""
    return "running" if state in ("running", "paused", "restarting") else "exited"


def published_port(attrs: Mapping[str, Any]) -> int | None:
    """The host port the daemon's port is published on, if it is published on loopback only.

    None when it is not published (yet), or when any binding is on a non-loopback address
    (docs/security.md A4: such a container is never talked to).
    """
    ports = (attrs.get("NetworkSettings") or {}).get("Ports") or {}
    bindings = ports.get(DAEMON_PORT) or []
    found: int | None = None
    for binding in bindings:
        host = str(binding.get("HostIp", ""))
        if not _is_loopback(host):
            return None
        try:
            found = int(binding.get("HostPort", ""))
        except ValueError:
            return None
    return found


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_folder(stat: Mapping[str, Any]) -> bool:
    """Whether an archive stat header describes a folder (not a link to one)."""
    mode = int(stat.get("mode", 0))
    return bool(mode & _GO_DIR) and not stat.get("linkTarget")


def is_regular(stat: Mapping[str, Any]) -> bool:
    """Whether an archive stat header describes a regular file."""
    return not int(stat.get("mode", 0)) & _GO_TYPE_BITS and not stat.get("linkTarget")
