"""The task file format (ENV_DESIGN §3.11): pydantic models, validators and the loader.

A task is data: one YAML file per task under ``srez_env/tasks/``, written by
``env/tools/gen_tasks.py`` and validated here. Validation is strict (unknown fields are errors,
models are frozen) because a task file that silently means something else would corrupt every
score computed from it. Each cross-field rule raises a one-line message that names the field and
says what is allowed; :func:`load_task` prefixes it with the file name.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

from pydantic import (
    AwareDatetime,
    Field,
    StrictInt,
    field_validator,
    model_validator,
)

from srez_env.actions import MUTATING, READ_TOOLS, TOOLS
from srez_env.task_world import Strict, WorldSpec
from srez_env.telemetry.alerts import SEVERITY
from srez_env.vocab import FAULT_KINDS, SERVICES, FaultKind, ServiceName
from srez_env.world import topology
from srez_env.world.base import TYPICAL, BaseWorld
from srez_env.world.schema import BASE_FILES, is_inert

__all__ = [
    "BASE_REGISTRY",
    "EVIDENCE_TOOL_ARGS",
    "FAULT_KINDS",
    "INERT_KEYS",
    "MUTATING_TOOL_ARGS",
    "SERVICES",
    "Action",
    "Calibration",
    "CertSpec",
    "ConfigEdit",
    "DecoyEffect",
    "DecoyLog",
    "EventSpec",
    "EvidenceItem",
    "FaultKind",
    "GroundTruth",
    "Incident",
    "Injection",
    "Noise",
    "RootCause",
    "ServiceName",
    "Task",
    "VersionSpec",
    "WorldSpec",
    "derive_seed",
    "task_digest",
]

BASE_REGISTRY: Mapping[str, tuple[str, ...]] = {
    s: tuple(name for name, _ in versions) for s, versions in topology.BASE_REGISTRY.items()
}
"""Versions every task starts with (§6.9), oldest first; the last one is running."""

INERT_KEYS: Mapping[str, frozenset[str]] = {
    s: frozenset(k for k in BASE_FILES[s].values if is_inert(s, k)) for s in SERVICES
}
"""Per service, the keys no rule or engine term reads (§3.2); only these may be decoy edits."""

EVIDENCE_TOOL_ARGS: Mapping[str, frozenset[str]] = {
    name: frozenset(TOOLS[name].args.model_fields) for name in READ_TOOLS
}
"""The arguments of each read-only tool an evidence item may name (§3.7)."""

MUTATING_TOOL_ARGS: Mapping[str, frozenset[str]] = {
    name: frozenset(spec.args.model_fields) for name, spec in TOOLS.items() if name in MUTATING
}
"""The mutating tools and their exact arguments; a reference fix uses only these."""

ALERT_NAMES: frozenset[str] = frozenset(SEVERITY)
"""The alert names of §6.6."""

VERSION_PROPS: Mapping[str, type] = {
    "leak_mb_per_min": float,
    "error_rate": float,
    "query_mult": float,
    "changelog": str,
    "exception": str,
}
"""The version properties the engine and the renderer read, with their types."""

_SERVICE_RE = "|".join(SERVICES)
_KEY_RE = r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+"
_CHANGE_RE = re.compile(rf"^(?:{_SERVICE_RE}):{_KEY_RE}$")
_CONF_KEY_RE = re.compile(rf"^{_KEY_RE}$")
_ALERT_ALSO_RE = re.compile(rf"^([A-Za-z0-9]+):({_SERVICE_RE})$")
_CERT_PATH_RE = re.compile(r"^/etc/certs/[a-z0-9][a-z0-9._-]*\.pem$")


def derive_seed(task_id: str) -> int:
    """Derives a task's noise seed from its id (§3.6).

    Args:
        task_id: The task id, e.g. ``"sre-007"``.

    Returns:
        The first four bytes of ``sha256("sre-zero:v1:<id>")`` as a big-endian integer.
    """
    digest = hashlib.sha256(f"sre-zero:v1:{task_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


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

    path: str = Field(pattern=_CERT_PATH_RE.pattern)
    not_after: AwareDatetime
    """Normalised to UTC."""
    subject: str | None = Field(default=None, pattern=r"^CN=[a-z0-9][a-z0-9.-]*$")
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


EvidenceTool = Literal[
    "get_logs", "get_metrics", "get_config", "get_status", "get_events", "get_alerts"
]


class EvidenceItem(Strict):
    """An observation an expert makes before acting (§3.9): matched by args and a witness."""

    id: str = Field(min_length=1)
    tool: EvidenceTool
    match: dict[str, str] = {}
    """Arguments a call must have, compared by equality; the others are free."""
    oracle_args: dict[str, StrictInt | str] = {}
    """Extra arguments the oracle adds to reach the witness (not matched)."""
    witness: str | None = None
    """A substring the observation must contain (for ``get_config``: a whole line)."""
    why: str = Field(min_length=1)

    @model_validator(mode="after")
    def _args_of_tool(self) -> EvidenceItem:
        allowed = EVIDENCE_TOOL_ARGS[self.tool]
        shown = ", ".join(sorted(allowed)) or "none"
        for field, args in (("match", self.match), ("oracle_args", self.oracle_args)):
            unknown = sorted(set(args) - allowed)
            if unknown:
                names = ", ".join(unknown)
                msg = f"{field}: {names} not an argument of {self.tool} (allowed: {shown})"
                raise ValueError(msg)
        both = sorted(set(self.match) & set(self.oracle_args))
        if both:
            msg = f"oracle_args: {', '.join(both)} already in match; the two must be disjoint"
            raise ValueError(msg)
        return self


class RootCause(Strict):
    """The (service, fault kind) the agent must declare."""

    service: ServiceName | Literal["none"]
    fault: FaultKind


class GroundTruth(Strict):
    """What the grader and the oracle know and the agent does not."""

    root_cause: RootCause
    propagation: list[ServiceName]
    """The root first, then the services its failure reaches, in causal order."""
    required_evidence: list[EvidenceItem] = Field(min_length=1)
    allowed_changes: list[str]
    """Keys the fix may change, as ``"service:key"``; anything else is collateral."""
    allowed_restarts: list[ServiceName] = []
    """Services the fix may restart (``restart`` or ``rollback``) without penalty."""

    @field_validator("allowed_changes")
    @classmethod
    def _change_refs(cls, refs: list[str]) -> list[str]:
        for ref in refs:
            if not _CHANGE_RE.match(ref):
                msg = f"{ref!r} must look like 'service:key' (e.g. 'payments:db.pool_max')"
                raise ValueError(msg)
        return refs

    @field_validator("required_evidence")
    @classmethod
    def _unique_ids(cls, items: list[EvidenceItem]) -> list[EvidenceItem]:
        seen: set[str] = set()
        for item in items:
            if item.id in seen:
                msg = f"evidence id {item.id!r} is used twice; ids must be unique"
                raise ValueError(msg)
            seen.add(item.id)
        return items

    @field_validator("propagation")
    @classmethod
    def _no_repeats(cls, services: list[ServiceName]) -> list[ServiceName]:
        if len(set(services)) != len(services):
            msg = f"{services} lists a service twice"
            raise ValueError(msg)
        return services


class Calibration(Strict):
    """Expected outcomes of the two calibrators (§6.12, §6.13), asserted per task by CI."""

    heuristic_expected: bool
    """Whether the heuristic expert passes the task."""
    loudest_expected: ServiceName | Literal["none"]
    """The service the loudest-anomaly calibrator blames at T0."""


class Action(Strict):
    """One tool call, ``{tool, args}``."""

    tool: str = Field(min_length=1)
    args: dict[str, StrictInt | str] = {}
    """Arguments; integers stay integers (``replicas``) and strings stay strings (``"5432"``)."""


class Task(Strict):
    """One benchmark task (ENV_DESIGN §3.11)."""

    schema_version: Literal[1]
    id: str = Field(pattern=r"^sre-(?:[0-9a-f]{6}-)?\d{3}$")
    """``sre-NNN`` for the canonical set, ``sre-<set tag>-NNN`` for a generated one."""
    title: str = Field(min_length=1)
    fault_kind: FaultKind
    difficulty: Literal["easy", "medium", "hard"]
    seed: int
    """Drives render noise and benign templates; always ``derive_seed(id)``."""
    max_steps: int = Field(ge=5, le=60)
    incident: Incident
    injection: Injection
    noise: Noise
    ground_truth: GroundTruth
    reference_fix: list[Action]
    """Mutations that fix the fault; the reference patch is the diff they produce."""
    calibration: Calibration
    world: WorldSpec | None = None
    """The task's own base world; ``None`` starts from the typical world of §3.2."""

    def base_world(self) -> BaseWorld:
        """The world before the incident: the task's own, or the typical one."""
        return TYPICAL if self.world is None else self.world.base_world(self.incident.start)

    def provenance(self) -> dict[str, object]:
        """Where the task's world came from, as ``run.json`` records it."""
        world = self.world
        return {
            "world_generator": world.generator if world else None,
            "world_seed": world.seed if world else None,
            "task_set_seed": world.set_seed if world else None,
        }

    @property
    def expert_steps(self) -> int:
        """Length of the oracle's trajectory: evidence, declare, the fix, submit."""
        return len(self.ground_truth.required_evidence) + 1 + len(self.reference_fix) + 1

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        # Each check raises with the dotted field path first, because errors raised here carry
        # no location of their own.
        self._check_identity()
        self._check_fix()
        self._check_events()
        if self.noise.log_dedup and not 20 <= self.incident.onset_min_before <= 45:
            msg = (
                "noise.log_dedup: needs 20 <= incident.onset_min_before <= 45, "
                f"got {self.incident.onset_min_before}"
            )
            raise ValueError(msg)
        return self

    def _check_identity(self) -> None:
        expected = derive_seed(self.id)
        if self.seed != expected:
            msg = f"seed: {self.seed} is not derive_seed({self.id!r}) = {expected}"
            raise ValueError(msg)
        root = self.ground_truth.root_cause
        if root.fault != self.fault_kind:
            msg = (
                f"ground_truth.root_cause.fault: {root.fault!r} differs from "
                f"fault_kind {self.fault_kind!r}"
            )
            raise ValueError(msg)
        if self.fault_kind == "none":
            if root.service != "none":
                msg = "ground_truth.root_cause.service: a control task's root service is 'none'"
                raise ValueError(msg)
            if self.ground_truth.propagation:
                msg = "ground_truth.propagation: a control task has no propagation"
                raise ValueError(msg)
        else:
            if root.service == "none":
                msg = f"ground_truth.root_cause.service: a {self.fault_kind} task needs a service"
                raise ValueError(msg)
            prop = self.ground_truth.propagation
            if not prop or prop[0] != root.service:
                msg = f"ground_truth.propagation: must start with the root service {root.service!r}"
                raise ValueError(msg)

    def _check_fix(self) -> None:
        gt = self.ground_truth
        if self.fault_kind == "none":
            for name, entries in (
                ("reference_fix", self.reference_fix),
                ("ground_truth.allowed_changes", gt.allowed_changes),
                ("ground_truth.allowed_restarts", gt.allowed_restarts),
            ):
                if entries:
                    msg = f"{name}: must be empty for a control task (fault_kind 'none')"
                    raise ValueError(msg)
            return
        touched: list[tuple[int, str]] = []
        restarted: list[tuple[int, str]] = []
        for i, action in enumerate(self.reference_fix):
            where = f"reference_fix[{i}]"
            allowed = MUTATING_TOOL_ARGS.get(action.tool)
            if allowed is None:
                tools = ", ".join(MUTATING_TOOL_ARGS)
                msg = f"{where}.tool: {action.tool!r} is not a mutating tool (allowed: {tools})"
                raise ValueError(msg)
            if set(action.args) != allowed:
                msg = f"{where}.args: {action.tool} takes exactly {', '.join(sorted(allowed))}"
                raise ValueError(msg)
            service = action.args["service"]
            if service not in SERVICES:
                msg = f"{where}.args.service: {service!r} is not one of {', '.join(SERVICES)}"
                raise ValueError(msg)
            for arg, value in action.args.items():
                wants_int = arg == "replicas"
                if isinstance(value, int) != wants_int:
                    kind = "an integer" if wants_int else "a string"
                    msg = f"{where}.args.{arg}: must be {kind}, got {value!r}"
                    raise ValueError(msg)
            if action.tool == "set_config":
                touched.append((i, f"{service}:{action.args['key']}"))
            elif action.tool == "rollback":
                touched.append((i, f"{service}:deploy.version"))
            elif action.tool == "scale":
                touched.append((i, f"{service}:deploy.replicas"))
            if action.tool in ("restart", "rollback"):
                restarted.append((i, str(service)))
        for i, key in touched:
            if key not in gt.allowed_changes:
                msg = (
                    f"reference_fix[{i}]: changes {key!r}, which is not in "
                    f"ground_truth.allowed_changes {gt.allowed_changes}"
                )
                raise ValueError(msg)
        for i, service in restarted:
            if service not in gt.allowed_restarts:
                msg = (
                    f"reference_fix[{i}]: restarts {service!r}, which is not in "
                    f"ground_truth.allowed_restarts {gt.allowed_restarts}"
                )
                raise ValueError(msg)

    def _check_events(self) -> None:
        registry = self.base_world().registry
        known = {s: {name for name, _ in registry[s]} for s in SERVICES}
        for spec in self.injection.versions:
            known[spec.service].add(spec.version)
        for field, events in (
            ("injection.events", self.injection.events),
            ("noise.decoy_events", self.noise.decoy_events),
        ):
            for i, event in enumerate(events):
                if event.kind == "deploy" and event.value not in known[event.service]:
                    versions = ", ".join(sorted(known[event.service]))
                    msg = (
                        f"{field}[{i}].value: version {event.value!r} is not in the "
                        f"{event.service} registry ({versions}); list it in injection.versions"
                    )
                    raise ValueError(msg)


def task_digest(task: Task) -> str:
    """A content hash of a task, for caches keyed on what the task means, not on its file.

    Args:
        task: The task.

    Returns:
        The sha256 hex digest of the task's canonical JSON (sorted keys, §6.7 separators).
    """
    data = task.model_dump(mode="json")
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))
    return hashlib.sha256(text.encode()).hexdigest()
