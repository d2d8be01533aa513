"""The ``local`` backend's config: how its agents are isolated and how its daemons are started.

``SREZ_SANDBOX`` chooses the isolation (:mod:`.sandbox`): ``auto`` (default), ``bubblewrap`` or
``none``. ``SREZ_RUN_TEMPLATE=0`` starts every run's daemon as a fresh interpreter instead of a
fork of the warm run template (:mod:`.template`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field

from srez_client.backends.config import BackendConfig

SandboxMode = Literal["auto", "bubblewrap", "none"]
"""``auto``: bubblewrap when it works here, else none; ``bubblewrap``: bubblewrap or no run."""


class LocalConfig(BackendConfig):
    """How the ``local`` backend is made."""

    ENV: ClassVar[Mapping[str, str]] = {
        "sandbox": "SREZ_SANDBOX",
        "run_template": "SREZ_RUN_TEMPLATE",
    }

    kind: Literal["local"] = "local"
    """Always ``local``."""
    sandbox: SandboxMode = "auto"
    """How runs' agents are isolated (``$SREZ_SANDBOX``)."""
    run_template: bool = True
    """Fork each run's daemon from a warm template process (``$SREZ_RUN_TEMPLATE``; ``0``
    starts every daemon afresh)."""
    daemon_argv: tuple[str, ...] | None = Field(default=None, min_length=1)
    """The daemon command (None: ``python -m srez_daemon`` of this interpreter)."""
    ready_timeout_s: float = Field(default=10.0, gt=0)
    """How long a launch waits for the daemon to answer ``/api/health``."""
    stop_grace_s: float = Field(default=10.0, ge=0)
    """How long ``stop`` waits after SIGTERM before SIGKILL."""
