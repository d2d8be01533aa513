"""The task file format (docs/environment.md §3.11): the :class:`Task` model and its cross-block
rules.

A task is data: one YAML file per task under ``srez_env/tasks/``, written by
``env/tools/gen_tasks.py`` and read by :func:`srez_env.tasks.load_task`. Validation is strict
(unknown fields are errors, models are frozen) because a task file that silently means something
else would corrupt every score computed from it. Each cross-field rule raises a one-line message
that names the field and says what is allowed; the loader prefixes it with the file name.

The blocks of a task live in their own modules and are re-exported here: the incident, injection
and noise in :mod:`srez_env.task_scenario`, the ground truth, reference fix and calibration in
:mod:`srez_env.task_truth`, the task's own base world in :mod:`srez_env.task_world`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Literal

from pydantic import Field, model_validator

from srez_env.task_scenario import (
    INERT_KEYS,
    CertSpec,
    ConfigEdit,
    DecoyEffect,
    DecoyLog,
    EventSpec,
    Incident,
    Injection,
    Noise,
    VersionSpec,
)
from srez_env.task_truth import (
    MUTATING_TOOL_ARGS,
    Action,
    Calibration,
    EvidenceItem,
    GroundTruth,
    RootCause,
    check_fix_action,
)
from srez_env.task_world import Strict, WorldSpec
from srez_env.vocab import FAULT_KINDS, SERVICES, FaultKind, ServiceName
from srez_env.world import topology
from srez_env.world.base import TYPICAL, BaseWorld

__all__ = [
    "BASE_REGISTRY",
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


def derive_seed(task_id: str) -> int:
    """Derives a task's noise seed from its id (§3.6).

    Args:
        task_id: The task id, e.g. ``"sre-007"``.

    Returns:
        The first four bytes of ``sha256("sre-zero:v1:<id>")`` as a big-endian integer.
    """
    digest = hashlib.sha256(f"sre-zero:v1:{task_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


class Task(Strict):
    """One benchmark task (docs/environment.md §3.11)."""

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
        for i, action in enumerate(self.reference_fix):
            check_fix_action(f"reference_fix[{i}]", action)
        for verb, name, allowed, target_of in (
            ("changes", "allowed_changes", gt.allowed_changes, Action.changed_key),
            ("restarts", "allowed_restarts", gt.allowed_restarts, Action.restarted_service),
        ):
            for i, action in enumerate(self.reference_fix):
                target = target_of(action)
                if target is not None and target not in allowed:
                    msg = (
                        f"reference_fix[{i}]: {verb} {target!r}, which is not in "
                        f"ground_truth.{name} {allowed}"
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
