"""The backends the client knows: one entry per backend, its config and where its class lives.

A backend is a folder ``backends/<name>/`` holding its config (``config.py``: a
:class:`~srez_client.backends.config.BackendConfig` subclass with ``kind: Literal["<name>"]``) and
its class (a :class:`~srez_client.backends.base.Backend` with ``from_config``); its entry below
names both. The configs are small pydantic models and are imported here; a backend's class is
imported only when a backend of that kind is made or asked for its traits, so importing this
module (every command does) never loads the Docker SDK or the ``local`` backend's modules.

Adding a backend: its folder, its entry in :data:`ENTRIES`, and its parameter in the conformance
suite (``tests/client/backend_contract.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from srez_client.backends.base import Backend
from srez_client.backends.config import BackendConfig, BackendSettings
from srez_client.backends.docker.config import DockerConfig
from srez_client.backends.inline.config import InlineConfig
from srez_client.backends.local.config import LocalConfig
from srez_client.backends.ray.config import RayConfig
from srez_client.errors import UsageError


@dataclass(frozen=True, slots=True)
class BackendEntry:
    """One backend: how it is configured and where its class lives."""

    config: type[BackendConfig]
    """Its config model; the default of its ``kind`` field is the backend's name."""
    location: str
    """``module:Class`` of its :class:`Backend` subclass, imported on first use."""

    @property
    def name(self) -> str:
        """The backend's name (``--backend``, ``run.json``)."""
        return str(self.config.model_fields["kind"].default)

    def load(self) -> type[Backend]:
        """The backend's class (its module is imported now, once).

        Raises:
            TypeError: If the entry does not name a :class:`Backend` subclass.
        """
        module, _, attribute = self.location.partition(":")
        found = getattr(importlib.import_module(module), attribute)
        if not (isinstance(found, type) and issubclass(found, Backend)):
            msg = f"backend entry {self.name!r}: {self.location} is not a Backend subclass"
            raise TypeError(msg)
        return found


ENTRIES: Final = (
    BackendEntry(InlineConfig, "srez_client.backends.inline.backend:InlineBackend"),
    BackendEntry(LocalConfig, "srez_client.backends.local.backend:LocalBackend"),
    BackendEntry(DockerConfig, "srez_client.backends.docker.backend:DockerBackend"),
    BackendEntry(RayConfig, "srez_client.backends.ray.backend:RayBackend"),
)
"""Every backend, in the order commands try them (``srez mirror RUN`` looks for a run in this
order)."""

REGISTRY: Final[Mapping[str, BackendEntry]] = {entry.name: entry for entry in ENTRIES}
BACKEND_NAMES: Final = tuple(REGISTRY)
"""The names ``--backend`` accepts."""
DEFAULT_BACKEND: Final = "local"
"""Where ``srez run`` and ``srez runs`` look without ``--backend`` (docs/design.md §9)."""


def entry_for(name: str) -> BackendEntry:
    """The entry of the backend called ``name``.

    Raises:
        UsageError: If there is no such backend (the message lists those there are).
    """
    try:
        return REGISTRY[name]
    except KeyError:
        msg = f"backend {name!r} is not available (available: {', '.join(BACKEND_NAMES)})"
        raise UsageError(msg) from None


def backend_class(name: str) -> type[Backend]:
    """The class of the backend called ``name``, for its traits (imported now).

    Raises:
        UsageError: If there is no such backend.
    """
    return entry_for(name).load()


def names_where(trait: Callable[[type[Backend]], bool]) -> list[str]:
    """The names of the backends whose class has ``trait``, in registry order (each class is
    imported: for messages and choices made once, not on every command)."""
    return [entry.name for entry in ENTRIES if trait(entry.load())]


def config_for(name: str, settings: BackendSettings) -> BackendConfig:
    """The config of backend ``name``: the shared settings plus its own ``SREZ_*`` variables.

    Raises:
        UsageError: If there is no such backend, or a variable has a value it does not accept.
    """
    return entry_for(name).config.from_settings(settings)


def parse_config(values: Mapping[str, object]) -> BackendConfig:
    """A config from plain values whose ``kind`` names the backend (a saved or typed config).

    Raises:
        UsageError: If ``kind`` names no backend, or a value is not accepted.
    """
    kind = values.get("kind")
    if not isinstance(kind, str):
        msg = f"a backend config needs a kind, one of {', '.join(BACKEND_NAMES)}"
        raise UsageError(msg)
    return entry_for(kind).config.parse(values)


def make_backend(config: BackendConfig) -> Backend:
    """The backend ``config`` describes (its class is imported now)."""
    return entry_for(config.kind).load().from_config(config)


def get_backend(name: str, settings: BackendSettings) -> Backend:
    """The backend called ``name``, configured from ``settings``.

    Raises:
        UsageError: If there is no such backend, or its configuration is not acceptable.
    """
    return make_backend(config_for(name, settings))
