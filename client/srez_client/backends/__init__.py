"""Backends: where and how a run executes (docs/design.md §9).

The interface is :class:`~srez_client.backends.base.Backend`; the registry
(:mod:`srez_client.backends.registry`) makes one by name from its config, importing its module
only then. ``inline`` runs the episode in this process (:func:`run_inline` is also usable on its
own, for the fastest sweeps); ``local`` runs one ``srez-daemon`` process per run on 127.0.0.1;
``docker`` runs one container per run from the run image, published on 127.0.0.1 only.

The names below are loaded on first use (PEP 562): importing a module of this package (the
registry, for the argument parser) must not import every backend.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from srez_client.backends.base import (
        Backend,
        LaunchSpec,
        RunHandle,
        RunStatus,
    )
    from srez_client.backends.config import BackendConfig, BackendSettings
    from srez_client.backends.inline.backend import InlineBackend
    from srez_client.backends.inline.host import InlineRun, run_inline
    from srez_client.backends.registry import BACKEND_NAMES, DEFAULT_BACKEND, get_backend

_HOMES: Final = {
    "srez_client.backends.base": (
        "Backend",
        "LaunchSpec",
        "RunHandle",
        "RunStatus",
    ),
    "srez_client.backends.config": ("BackendConfig", "BackendSettings"),
    "srez_client.backends.inline.backend": ("InlineBackend",),
    "srez_client.backends.inline.host": ("InlineRun", "run_inline"),
    "srez_client.backends.registry": ("BACKEND_NAMES", "DEFAULT_BACKEND", "get_backend"),
}

if not TYPE_CHECKING:  # mypy reads the imports above; an unknown name stays an error for it

    def __getattr__(name: str) -> object:
        for home, names in _HOMES.items():
            if name in names:
                value = getattr(importlib.import_module(home), name)
                globals()[name] = value  # later lookups skip this function
                return value
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)


__all__ = [
    "BACKEND_NAMES",
    "DEFAULT_BACKEND",
    "Backend",
    "BackendConfig",
    "BackendSettings",
    "InlineBackend",
    "InlineRun",
    "LaunchSpec",
    "RunHandle",
    "RunStatus",
    "get_backend",
    "run_inline",
]
