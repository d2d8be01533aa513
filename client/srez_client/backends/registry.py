"""The backends the client knows: one entry per backend, naming its config and its class by
import path.

A backend is a folder ``backends/<name>/`` holding its config (``config.py``: a
:class:`~srez_client.backends.config.BackendConfig` subclass with ``kind: Literal["<name>"]``) and
its class (a :class:`~srez_client.backends.base.Backend` with ``from_config``); its entry below
names both as ``module:Class`` strings, and the command-line options it declares. Nothing of a
backend is imported here: its config (a pydantic model) only when a config is made or read, its
class only when a backend of that kind is made or asked for its traits. So importing this module
(the argument parser does, for every command) costs no pydantic, no Docker SDK and no backend
module, and a command imports the one backend it uses.

Adding a backend touches three places (docs/backends.md, "Adding a backend", says it step by step):

1. its folder ``backends/<name>/``: ``config.py`` and a :class:`~srez_client.backends.base.Backend`
   with the lifecycle, its capability flags and the optional methods they promise; it imports
   nothing of the mirror, the results, the model relay or :mod:`srez_client.lifecycle`, which
   compose it with them;
2. its row in :data:`ENTRIES`;
3. its ``ContractCase`` in the conformance suite (``tests/client/backend_contract.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from srez_client.errors import UsageError

if TYPE_CHECKING:
    from srez_client.backends.base import Backend
    from srez_client.backends.config import BackendConfig, BackendSettings


@dataclass(frozen=True, slots=True)
class BackendOption:
    """A command-line option standing for one of a backend's settings (``--ray-address``)."""

    flag: str
    """The option (``--ray-address``)."""
    setting: str
    """The config field it sets (one of the config's ``OPTIONS``)."""
    variable: str
    """The ``SREZ_*`` variable it stands for (the field's entry in the config's ``ENV``)."""


@dataclass(frozen=True, slots=True)
class BackendEntry:
    """One backend: its name, and where its config and its class live."""

    name: str
    """The backend's name (``--backend``, ``run.json``; its config's ``kind``)."""
    config_location: str
    """``module:Class`` of its :class:`BackendConfig` subclass, imported on first use."""
    location: str
    """``module:Class`` of its :class:`Backend` subclass, imported on first use."""
    options: tuple[BackendOption, ...] = ()
    """The options of its config's ``OPTIONS``, spelled out so that the argument parser needs no
    config model (``tests/client/test_startup.py`` holds them to the config)."""
    writes_results: bool = False
    """Its class's :attr:`~srez_client.backends.base.Backend.writes_results` (it runs the episodes
    in this process), spelled out so that ``srez eval`` chooses its path without importing the
    class (``tests/client/test_startup.py`` holds it to the class)."""

    @property
    def config(self) -> type[BackendConfig]:
        """The backend's config model (its module is imported now, once)."""
        from srez_client.backends.config import BackendConfig

        found = _load(self.config_location)
        if not (isinstance(found, type) and issubclass(found, BackendConfig)):
            msg = f"backend entry {self.name!r}: {self.config_location} is not a BackendConfig"
            raise TypeError(msg)
        return found

    def load(self) -> type[Backend]:
        """The backend's class (its module is imported now, once).

        Raises:
            TypeError: If the entry does not name a :class:`Backend` subclass.
        """
        from srez_client.backends.base import Backend

        found = _load(self.location)
        if not (isinstance(found, type) and issubclass(found, Backend)):
            msg = f"backend entry {self.name!r}: {self.location} is not a Backend subclass"
            raise TypeError(msg)
        return found


def _load(location: str) -> object:
    module, _, attribute = location.partition(":")
    return getattr(importlib.import_module(module), attribute)


_PACKAGE: Final = "srez_client.backends"

ENTRIES: Final = (
    BackendEntry(
        "inline",
        f"{_PACKAGE}.inline.config:InlineConfig",
        f"{_PACKAGE}.inline.backend:InlineBackend",
        writes_results=True,
    ),
    BackendEntry(
        "local",
        f"{_PACKAGE}.local.config:LocalConfig",
        f"{_PACKAGE}.local.backend:LocalBackend",
    ),
    BackendEntry(
        "docker",
        f"{_PACKAGE}.docker.config:DockerConfig",
        f"{_PACKAGE}.docker.backend:DockerBackend",
    ),
    BackendEntry(
        "ray",
        f"{_PACKAGE}.ray.config:RayConfig",
        f"{_PACKAGE}.ray.backend:RayBackend",
        (BackendOption("--ray-address", "ray_address", "SREZ_RAY_ADDRESS"),),
    ),
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


LIVE_BACKENDS_VAR: Final = "SREZ_TUI_BACKENDS"
"""The comma list of backends ``srez tui`` and ``srez view`` list live runs on, when set."""


def live_backend_names(environ: Mapping[str, str], launched: Iterable[str] = ()) -> list[str]:
    """The backends to list live runs on (``srez tui``, ``srez view``): ``$SREZ_TUI_BACKENDS`` (a
    comma list) when it is set, else :data:`DEFAULT_BACKEND` and every backend of ``launched``
    (those this state launched runs on: :meth:`~srez_client.backends.state.Ledger.backends`), in
    registry order. A backend that writes its results as it runs (``inline``) is left out unless
    named: its runs are in the results folder already, and a name the registry does not know is
    left out too.

    Listing a backend nobody launched on would ask it for nothing (a Docker engine that may not
    be there, a Ray cluster); a backend this state launched on may hold a live run of the user's.
    """
    given = environ.get(LIVE_BACKENDS_VAR, "")
    if given.strip():
        return [n for n in dict.fromkeys(n.strip() for n in given.split(",")) if n in REGISTRY]
    wanted = {DEFAULT_BACKEND, *launched}
    return [e.name for e in ENTRIES if e.name in wanted and not e.writes_results]


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
