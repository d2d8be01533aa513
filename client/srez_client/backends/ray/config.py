"""The ``ray`` backend's config: which cluster, which backend runs the runs on each node.

``SREZ_RAY_ADDRESS`` (or ``--ray-address``) names an existing cluster (``HOST:PORT`` of its head,
or ``auto``); unset, each command starts a Ray instance of its own on 127.0.0.1, which ends with
it. ``SREZ_RAY_NODE_BACKEND`` chooses what executes a run on its node: ``local`` (default; sandboxed
as ``SREZ_SANDBOX`` says) or ``docker`` (nodes with an engine and the run image).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from srez_client.backends.config import BackendConfig
from srez_client.backends.local.config import SandboxMode

ADDRESS_RE = re.compile(r"^(auto|(ray://)?[A-Za-z0-9._-]+:[0-9]{1,5})$")
"""``auto`` or ``HOST:PORT`` (``ray://HOST:PORT`` for a Ray Client server)."""


class RayConfig(BackendConfig):
    """How the ``ray`` backend is made."""

    ENV: ClassVar[Mapping[str, str]] = {
        "ray_address": "SREZ_RAY_ADDRESS",
        "node_backend": "SREZ_RAY_NODE_BACKEND",
        "sandbox": "SREZ_SANDBOX",
        "run_template": "SREZ_RUN_TEMPLATE",
        "temp_dir": "SREZ_RAY_TEMP_DIR",
        "relay_host": "SREZ_RAY_RELAY_HOST",
    }
    OPTIONS: ClassVar[Mapping[str, str]] = {"ray_address": "--ray-address"}

    kind: Literal["ray"] = "ray"
    """Always ``ray``."""
    ray_address: str | None = None
    """The cluster to use (``$SREZ_RAY_ADDRESS``); None: a Ray instance of this process on
    127.0.0.1."""
    temp_dir: Path | None = None
    """Where a Ray instance this command starts keeps its files and sockets
    (``$SREZ_RAY_TEMP_DIR``; None: Ray's default, ``$RAY_TMPDIR`` or ``/tmp/ray``); keep it short:
    unix socket paths are limited to about 107 characters."""
    relay_host: str = Field(default="127.0.0.1", pattern=r"^[A-Za-z0-9.:_-]+$")
    """The address of this host that the cluster's nodes reach it by (``$SREZ_RAY_RELAY_HOST``):
    the model relay of the launcher's LLM runs listens there. ``127.0.0.1`` (the default) serves
    a cluster on this machine; a cluster of other machines needs this host's address on their
    network (never ``0.0.0.0``: the relay listens on one address)."""
    node_backend: Literal["local", "docker"] = "local"
    """The backend that executes each run on its node (``$SREZ_RAY_NODE_BACKEND``)."""
    sandbox: SandboxMode = "auto"
    """How a ``local`` node backend isolates its agents (``$SREZ_SANDBOX``)."""
    run_template: bool = True
    """Whether a ``local`` node backend forks its runs' daemons from a warm run template, one per
    Ray worker, kept for the runs the worker executes (``$SREZ_RUN_TEMPLATE``)."""
    max_retries: int = Field(default=3, ge=0)
    """How many times a run whose worker or node was lost is run again elsewhere."""
    namespace: str = Field(default="srez", pattern=r"^[A-Za-z0-9_-]+$")
    """The Ray namespace of the run registry actor (one per namespace)."""
    poll_s: float = Field(default=0.2, gt=0)
    """How often a node reports its run's phase, steps and new dialog lines to the registry."""

    @field_validator("relay_host")
    @classmethod
    def _relay_host(cls, value: str) -> str:
        if value in ("0.0.0.0", "::", "[::]"):  # noqa: S104 - the address refused here
            msg = "relay_host must be one address of this host that the nodes reach, not 0.0.0.0"
            raise ValueError(msg)
        return value

    @field_validator("ray_address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        if value is not None and not ADDRESS_RE.fullmatch(value):
            msg = f"{value!r} is not a Ray address (HOST:PORT of the head, ray://HOST:PORT or auto)"
            raise ValueError(msg)
        return value
