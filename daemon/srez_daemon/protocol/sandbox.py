"""The sandbox contract the daemon and the ``local`` backend share: how ``bwrap`` is found and the
namespaces every sandboxed agent gets.

The daemon builds the whole sandbox from these (:mod:`srez_daemon.sandbox`); the ``local`` backend
starts a throwaway sandbox with the same options to learn whether ``bwrap`` works on this machine
before it promises one (:mod:`srez_client.backends.local.sandbox`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Final

NAMESPACE_OPTIONS: Final = (
    "--unshare-all",
    "--unshare-user",
    "--disable-userns",
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--new-session",
)
"""New user, mount, PID, IPC, UTS, cgroup and network namespaces; no capabilities; no nested user
namespace (so no way to unlock the mounts that hide things); killed with its parent; a session of
its own (no ``TIOCSTI`` into a terminal)."""


def namespace_options(*, network: bool) -> list[str]:
    """bwrap's namespace options; ``network`` keeps the host's network (``--share-net``)."""
    return [*NAMESPACE_OPTIONS, *(["--share-net"] if network else [])]


def find_bwrap(environ: Mapping[str, str]) -> Path | None:
    """``bwrap`` on the ``PATH`` of ``environ``, or None."""
    found = shutil.which("bwrap", path=environ.get("PATH") or os.defpath)
    return Path(found) if found else None
