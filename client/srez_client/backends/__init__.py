"""Backends: where and how a run executes (DESIGN.md §9).

The interface is :class:`~srez_client.backends.base.Backend`; :func:`get_backend` makes one by
name, importing its module only then. ``inline`` runs the episode in this process
(:func:`run_inline` is also usable on its own, for the fastest sweeps); ``local`` runs one
``srez-daemon`` process per run on 127.0.0.1; ``docker`` runs one container per run from the run
image, published on 127.0.0.1 only.
"""

from srez_client.backends.base import (
    BACKEND_NAMES,
    Backend,
    BackendSettings,
    LaunchSpec,
    RunHandle,
    RunStatus,
)
from srez_client.backends.inline.backend import InlineBackend
from srez_client.backends.inline.host import InlineRun, run_inline
from srez_client.backends.registry import get_backend

AVAILABLE_BACKENDS = BACKEND_NAMES
"""Backends the command line accepts."""

__all__ = [
    "AVAILABLE_BACKENDS",
    "BACKEND_NAMES",
    "Backend",
    "BackendSettings",
    "InlineBackend",
    "InlineRun",
    "LaunchSpec",
    "RunHandle",
    "RunStatus",
    "get_backend",
    "run_inline",
]
