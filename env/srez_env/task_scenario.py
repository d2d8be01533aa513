"""The scenario blocks of a task file (docs/environment.md §3.11): the incident, the hidden
injection and the noise around it, with the validators that need nothing beyond one block.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

from pydantic import AwareDatetime, Field, field_validator, model_validator

from srez_env.task_world import CERT_PATH_RE, SUBJECT_RE, Strict
from srez_env.vocab import ALERT_SEVERITY, SERVICES, ServiceName
from srez_env.world.schema import BASE_FILES, is_inert

INERT_KEYS: Mapping[str, frozenset[str]] = {
    s: frozenset(k for k in BASE_FILES[s].values if is_inert(s, k)) for s in SERVICES
}
"""Per service, the keys no rule or engine term reads (§3.2); only these may be decoy edits."""

ALERT_NAMES: frozenset[str] = frozenset(ALERT_SEVERITY)
"""The alert names of §6.6."""

VERSION_PROPS: Mapping[str, type] = {
    "leak_mb_per_min": float,
    "error_rate": float,
    "query_mult": float,
    "changelog": str,
    "exception": str,
}
"""The version properties the engine and the renderer read, with their types."""

SERVICE_RE = "|".join(SERVICES)
"""A regular expression that matches one service name."""
KEY_RE = r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+"
"""A regular expression that matches one config key, ``section.key``."""
_CONF_KEY_RE = re.compile(rf"^{KEY_RE}$")
_ALERT_ALSO_RE = re.compile(rf"^([A-Za-z0-9]+):({SERVICE_RE})$")


class ConfigEdit(Strict):
    """One line of a service's config file changed by the injection."""

    service: ServiceName
    key: str = Field(pattern=_CONF_KEY_RE.pattern)
    """Key as ``section.key`` (split on the last dot), e.g. ``db.pool_max``."""
    value: str
    """The new value exactly as the file renders it (``"2"``, ``"true"``)."""
    minutes_before: int | None = Field(default=None, ge=1)
    """When the edit was made, in minutes before T0; ``None`` means at the onset."""


class VersionSpec(Strict):
    """A version added to a service's registry (a faulty release or a decoy's benign one)."""

    service: ServiceName
    version: str = Field(min_length=1)
    minutes_before: int = Field(ge=0)
    """Deploy time in minutes before T0."""
    props: dict[str, float | str] = {}
    """Engine and rendering properties: ``leak_mb_per_min``, ``error_rate``, ``query_mult``
    (numbers), ``changelog`` and ``exception`` (text)."""

    @field_validator("props")
    @classmethod
    def _known_props(cls, props: dict[str, float | str]) -> dict[str, float | str]:
        for name, value in props.items():
            expected = VERSION_PROPS.get(name)
            if expected is None:
                allowed = ", ".join(VERSION_PROPS)
                msg = f"unknown property {name!r} (allowed: {allowed})"
                raise ValueError(msg)
            if not isinstance(value, expected):
                msg = f"property {name!r} must be a {expected.__name__}, got {value!r}"
                raise ValueError(msg)
        return props


class CertSpec(Strict):
    """Overrides the expiry of one certificate of the catalogue, or adds one (§6.9)."""

    path: str = Field(pattern=CERT_PATH_RE)
    not_after: AwareDatetime
    """Normalised to UTC."""
    subject: str | None = Field(default=None, pattern=SUBJECT_RE)
    """The certificate's subject; ``None`` keeps the catalogue's (or, for a new path, the
    service named in the file name)."""

    @field_validator("not_after")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        # One canonical zone, so files that mean the same instant dump and digest identically.
        return value.astimezone(UTC)


EventKind = Literal["deploy", "config_change", "restart", "scale", "cert_renewed", "job"]


class EventSpec(Strict):
    """An audit event that really happened (a decoy or context event, §6.10)."""

    minutes_before: int = Field(ge=0)
    service: ServiceName
    kind: EventKind
    text: str = Field(min_length=1)
    """The line ``get_events`` shows, verbatim."""
    key: str | None = None
    """``config_change``: the inert key edited; ``scale``: ``deploy.replicas``."""
    value: str | None = None
    """``deploy``: the version deployed; ``config_change``: the new value; ``scale``: the new
    replica count."""

    @model_validator(mode="after")
    def _kind_fields(self) -> EventSpec:
        if self.kind == "deploy":
            if self.value is None or self.key not in (None, "deploy.version"):
                msg = "value: a deploy event needs the deployed version (and no key)"
                raise ValueError(msg)
        elif self.kind == "config_change":
            inert = INERT_KEYS[self.service]
            if self.key not in inert:
                allowed = ", ".join(sorted(inert))
                msg = (
                    f"key: {self.key!r} is not an inert key of {self.service}; "
                    f"a config_change may edit only {allowed}"
                )
                raise ValueError(msg)
            if self.value is None:
                msg = "value: a config_change event needs the new value"
                raise ValueError(msg)
        elif self.kind == "scale":
            if self.key != "deploy.replicas" or self.value is None or not self.value.isdigit():
                msg = "key, value: a scale event needs key deploy.replicas and the new count"
                raise ValueError(msg)
            if not 0 <= int(self.value) <= 10:
                msg = f"value: {self.value!r} must be a replica count in 0..10"
                raise ValueError(msg)
        elif self.key is not None or self.value is not None:
            msg = f"key, value: a {self.kind} event takes neither"
            raise ValueError(msg)
        return self


class DecoyLog(Strict):
    """A benign-looking log stream that matches no fault signature."""

    service: ServiceName
    every_min: int = Field(ge=1)
    """The line is printed at minutes ``m`` with ``m mod every_min == 0``."""
    level: Literal["INFO", "WARN", "ERROR"]
    text: str = Field(min_length=1)


class DecoyEffect(Strict):
    """Real load or slowness on a bystander service (a batch job, an index rebuild)."""

    service: ServiceName
    effect: Literal["extra_rps", "lat_mult"]
    value: float = Field(gt=0)
    from_min: int
    """First minute, relative to T0 (negative = before T0)."""
    to_min: int
    """Last minute, relative to T0."""

    @model_validator(mode="after")
    def _window(self) -> DecoyEffect:
        if self.to_min < self.from_min:
            msg = f"to_min: {self.to_min} is before from_min {self.from_min}"
            raise ValueError(msg)
        return self


class Incident(Strict):
    """What the on-call sees first: when it started and the page text."""

    start: AwareDatetime
    """T0, the minute the incident is handed over; normalised to UTC."""
    onset_min_before: int = Field(ge=1, le=120)
    """Minutes between the fault's onset and T0."""
    brief: str = Field(min_length=1)
    """The page as the agent reads it; it never names the root cause."""

    @field_validator("start")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.astimezone(UTC)


class Injection(Strict):
    """The hidden edits that make the fault's rule fire."""

    config: list[ConfigEdit] = []
    versions: list[VersionSpec] = []
    certs: list[CertSpec] = []
    events: list[EventSpec] = []
    """Context events that belong to the fault's story (e.g. a certificate renewal)."""


class Noise(Strict):
    """Difficulty knobs: alert scope, the fault's audit event and the decoys."""

    alert_scope: Literal["all", "edge"]
    """``all``: every violating service alerts; ``edge``: only the gateway (plus ``alert_also``)."""
    fault_event: Literal["visible", "hidden", "camouflaged"]
    """Whether the fault's own audit event is listed; the environment derives its text."""
    decoy_events: list[EventSpec] = []
    decoy_logs: list[DecoyLog] = []
    decoy_effects: list[DecoyEffect] = []
    alert_also: list[str] = []
    """Extra in-scope alerts in edge scope, as ``"AlertName:service"``."""
    log_dedup: bool = False
    """Print each signature line once an hour, with a suppression notice in between (§6.8)."""
    fault_lines: Literal["specific", "generic"] = "specific"
    """``generic``: a fault's signature lines are not written, only the per-request consequence
    every failing request leaves (§6.8): the logs say *that* calls fail, never *why*."""
    benign_lines_per_min: int = Field(default=3, ge=0)

    @field_validator("alert_also")
    @classmethod
    def _alert_refs(cls, refs: list[str]) -> list[str]:
        for ref in refs:
            found = _ALERT_ALSO_RE.match(ref)
            if found is None or found.group(1) not in ALERT_NAMES:
                names = ", ".join(sorted(ALERT_NAMES))
                msg = f"{ref!r} must look like 'AlertName:service' with AlertName one of {names}"
                raise ValueError(msg)
        return refs
