"""A base world: the configuration files, deploy history, certificates and traffic at the start.

Every task starts from its own base world (docs/environment.md §6.15): the same services, keys and
rules, but its own values, versions, certificate names and dates, and traffic level, drawn from a
seeded distribution by the task generator and written into the task file. :data:`TYPICAL` is the
world of §3.2; a task file without a ``world`` block starts from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from srez_env.world import topology as topo
from srez_env.world.conffile import ConfFile
from srez_env.world.schema import BASE_FILES


@dataclass(frozen=True, slots=True)
class BaseWorld:
    """The state of the system before any incident, as data."""

    files: Mapping[str, ConfFile]
    registry: Mapping[str, tuple[tuple[str, int], ...]]
    """Per service, (version, minutes before T0), oldest first; the last one is running."""
    certs: Mapping[str, int]
    """The certificate catalogue: path -> not_after, in minutes from T0."""
    subjects: Mapping[str, str]
    """The certificate catalogue: path -> subject (``CN=<host>``)."""
    ingress_rps: float
    """Requests per second arriving at the gateway."""


def expected_subject(service: str) -> str:
    """The subject a client that verifies TLS expects from ``service``."""
    return f"CN={service}.svc.internal"


TYPICAL: Final = BaseWorld(
    files=BASE_FILES,
    registry=topo.BASE_REGISTRY,
    certs=topo.BASE_CERTS,
    subjects={path: topo.cert_subject(path) for path in topo.BASE_CERTS},
    ingress_rps=topo.INGRESS_RPS,
)
