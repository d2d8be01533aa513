"""Reaching Ray: the lazy import (Ray is the optional extra ``srez[ray]``) and the connection.

Importing :mod:`srez_client` never imports Ray; the ``ray`` backend imports it on first use, and
without the extra it says in one line what to install. A loopback address (or none: a Ray instance
of this process) keeps every address on 127.0.0.1: Ray would otherwise advertise the host's
interface address, and a driver would wait for a head that is not listening there.
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path
from typing import Any, Final

from srez_client.errors import BackendError

INSTALL_HINT: Final = "the ray backend needs Ray: pip install 'srez[ray]'"
LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")
_LOOPBACK_ONLY: Final = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch (read when it is imported) that makes it name this host 127.0.0.1."""
_AUTH_MODE: Final = "RAY_AUTH_MODE"


def is_loopback(address: str | None) -> bool:
    """Whether ``address`` (None: a Ray instance of this process) is on this host's loopback."""
    if address is None:
        return True
    host = address.removeprefix("ray://").rpartition(":")[0]
    return host in LOOPBACK


def import_ray(address: str | None) -> Any:
    """The ``ray`` module, imported now.

    Raises:
        BackendError: If Ray is not installed (the message says which extra to install).
    """
    if is_loopback(address):
        os.environ.setdefault(_LOOPBACK_ONLY, "0")
    if address is None:  # an instance of this process, on loopback: no token to hand around
        os.environ.setdefault(_AUTH_MODE, "disabled")
    try:
        return importlib.import_module("ray")
    except ImportError as e:
        raise BackendError(INSTALL_HINT) from e


def connect(address: str | None, namespace: str, temp_dir: Path | None = None) -> tuple[Any, bool]:
    """Ray, connected to the cluster at ``address`` or to a new instance on 127.0.0.1 (None),
    which keeps its files under ``temp_dir`` (None: Ray's default).

    Returns:
        (the ``ray`` module, whether this call connected: the caller disconnects then).

    Raises:
        BackendError: If Ray is missing or the cluster cannot be reached.
    """
    ray = import_ray(address)
    if ray.is_initialized():
        return ray, False
    options: dict[str, Any] = {
        "namespace": namespace,
        "log_to_driver": False,
        "logging_level": logging.WARNING,
        "include_dashboard": False,
    }
    if address is None:
        options["_node_ip_address"] = "127.0.0.1"
        if temp_dir is not None:
            options["_temp_dir"] = str(temp_dir)
    else:
        options["address"] = address
        del options["include_dashboard"]  # the cluster's own choice
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as e:
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        msg = f"cannot reach {where}: {e}"
        raise BackendError(msg) from e
    return ray, True
