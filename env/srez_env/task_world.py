"""The ``world`` block of a task file: the task's own base world, as data (docs/environment.md
§6.15).

The generator draws it from a seeded distribution and writes it out in full, so a task file
says everything about its world and never depends on the generator's code to be read back:
the configuration values that differ from the typical files, the complete deploy history, the
complete certificate catalogue and the traffic level. ``generator`` and ``seed`` record where it
came from (a task set is reproducible from them); nothing reads them to build the world.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from srez_core.field_docs import field_docstrings
from srez_env.vocab import SERVICES
from srez_env.world.base import BaseWorld
from srez_env.world.conffile import parse_value
from srez_env.world.schema import BASE_FILES, KeyRejected, check_edit, rule_for

CERT_PATH_RE = r"^/etc/certs/[a-z0-9][a-z0-9._-]*\.pem$"
"""A certificate file of the catalogue."""
SUBJECT_RE = r"^CN=[a-z0-9][a-z0-9.-]*$"
"""A certificate subject."""


class Strict(BaseModel):
    """Unknown fields are errors and instances are immutable (as every task model)."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=field_docstrings)


class DeployedVersion(Strict):
    """One entry of a service's deploy history."""

    version: str = Field(min_length=1, pattern=r"^[0-9A-Za-z][0-9A-Za-z.+-]*$")
    minutes_before: int = Field(ge=0)
    """Deploy time in minutes before T0."""


class CertEntry(Strict):
    """One certificate of the catalogue."""

    path: str = Field(pattern=CERT_PATH_RE)
    not_after: AwareDatetime
    subject: str = Field(pattern=SUBJECT_RE)

    @field_validator("not_after")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)


class WorldSpec(Strict):
    """A task's base world."""

    generator: str = Field(min_length=1)
    """The generator and its version, e.g. ``srez-worlds/1``."""
    seed: int = Field(ge=0)
    """The seed the world was drawn from."""
    set_seed: int | None = Field(default=None, ge=0)
    """The seed of the task set this task was generated in (the set is reproducible from it and
    ``generator``); the canonical set's is ``srez_env.generator.sets.CANONICAL_SEED``."""
    ingress_rps: float = Field(ge=100, le=2000)
    config: dict[str, dict[str, str]] = {}
    """Per service, the values that differ from the typical files (as the files write them)."""
    versions: dict[str, list[DeployedVersion]]
    """Per service, the complete deploy history, oldest first; the last one is running."""
    certs: list[CertEntry] = Field(min_length=1)

    @field_validator("versions")
    @classmethod
    def _every_service(
        cls, versions: dict[str, list[DeployedVersion]]
    ) -> dict[str, list[DeployedVersion]]:
        _known_services(versions)
        for s in SERVICES:
            history = versions.get(s)
            if not history:
                msg = f"{s}: needs a deploy history of at least one version"
                raise ValueError(msg)
            times = [v.minutes_before for v in history]
            if times != sorted(times, reverse=True) or len(set(times)) != len(times):
                msg = f"{s}: versions must be listed oldest first, at distinct times"
                raise ValueError(msg)
            if len({v.version for v in history}) != len(history):
                msg = f"{s}: a version appears twice in the history"
                raise ValueError(msg)
        return versions

    @field_validator("config")
    @classmethod
    def _config_services(cls, config: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        _known_services(config)
        return config

    @model_validator(mode="after")
    def _consistent(self) -> WorldSpec:
        catalogue = [c.path for c in self.certs]
        if len(set(catalogue)) != len(catalogue):
            msg = "world.certs: a path appears twice"
            raise ValueError(msg)
        for s, values in self.config.items():
            for key, raw in values.items():
                where = f"world.config.{s}.{key}"
                if key not in BASE_FILES[s].values:
                    msg = f"{where}: {s} has no key {key!r}"
                    raise ValueError(msg)
                if key == "deploy.version":
                    msg = f"{where}: the running version is the last of world.versions.{s}"
                    raise ValueError(msg)
                if rule_for(key).reload in ("live", "restart"):
                    try:
                        check_edit(s, key, raw, certs=catalogue)
                    except KeyRejected as e:
                        msg = f"{where}: {e} ({e.hint})"
                        raise ValueError(msg) from e
        return self

    def base_world(self, t0: datetime) -> BaseWorld:
        """The :class:`BaseWorld` this block describes, with ``t0`` as the incident's start."""
        files = {}
        for s in SERVICES:
            conf = BASE_FILES[s]
            conf = conf.with_value("deploy.version", self.versions[s][-1].version)
            for key, raw in self.config.get(s, {}).items():
                conf = conf.with_value(key, parse_value(raw))
            files[s] = conf
        return BaseWorld(
            files=files,
            registry={
                s: tuple((v.version, v.minutes_before) for v in self.versions[s]) for s in SERVICES
            },
            certs={c.path: _minutes(t0, c.not_after) for c in self.certs},
            subjects={c.path: c.subject for c in self.certs},
            ingress_rps=self.ingress_rps,
        )


def _known_services(by_service: Mapping[str, object]) -> None:
    unknown = sorted(set(by_service) - set(SERVICES))
    if unknown:
        msg = f"unknown service {unknown[0]!r} (allowed: {', '.join(SERVICES)})"
        raise ValueError(msg)


def _minutes(t0: datetime, moment: datetime) -> int:
    return int((moment - t0).total_seconds() // 60)
