"""Backends: where and how a run executes (docs/design.md §9).

The interface is :class:`~srez_client.backends.base.Backend`; the registry
(:mod:`srez_client.backends.registry`) makes one by name from its config, importing its module
only then. ``inline`` runs the episode in this process (:func:`run_inline` is also usable on its
own, for the fastest sweeps); ``local`` runs one ``srez-daemon`` process per run on 127.0.0.1;
``docker`` runs one container per run from the run image, published on 127.0.0.1 only.
"""

from srez_client.backends.base import (
    Backend,
    LaunchSpec,
    MirrorOutcome,
    RunHandle,
    RunStatus,
    WatchOptions,
)
from srez_client.backends.config import BackendConfig, BackendSettings
from srez_client.backends.inline.backend import InlineBackend
from srez_client.backends.inline.host import InlineRun, run_inline
from srez_client.backends.registry import BACKEND_NAMES, DEFAULT_BACKEND, get_backend

__all__ = [
    "BACKEND_NAMES",
    "DEFAULT_BACKEND",
    "Backend",
    "BackendConfig",
    "BackendSettings",
    "InlineBackend",
    "InlineRun",
    "LaunchSpec",
    "MirrorOutcome",
    "RunHandle",
    "RunStatus",
    "WatchOptions",
    "get_backend",
    "run_inline",
]
