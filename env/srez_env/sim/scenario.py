"""From a task file to a :class:`World` at T0 (docs/environment.md §3.3, §6.9, §6.10).

The task's injection edits the files (and the running config) at the onset, or earlier where a
``minutes_before`` says so; decoy events change the world exactly as their text says; the fault
event's text is derived from the injection unless the task hides it. The history up to T0 does not
depend on the agent, so it is computed once per task and every episode forks it.
"""

from __future__ import annotations

from datetime import datetime

from srez_env.sim.timeline import Change, Effect, Event, Version, World
from srez_env.task import EventSpec, Task
from srez_env.world import topology as topo
from srez_env.world.base import BaseWorld
from srez_env.world.conffile import parse_value

AGENT_ACTOR = "by on-call agent"


def minutes_from(t0: datetime, moment: datetime) -> int:
    """Whole minutes from T0 to ``moment`` (negative before T0)."""
    return int((moment - t0).total_seconds() // 60)


def onset_minute(task: Task) -> int:
    """The minute (relative to T0) at which the incident began."""
    return -task.incident.onset_min_before


def registry_for(task: Task, base: BaseWorld) -> dict[str, list[Version]]:
    """The world's registry plus the task's versions (faulty ones and benign decoy deploys)."""
    registry = {
        s: [Version(name, -before, {}) for name, before in base.registry[s]] for s in topo.SERVICES
    }
    for spec in task.injection.versions:
        registry[spec.service].append(Version(spec.version, -spec.minutes_before, dict(spec.props)))
    return registry


def certs_for(task: Task, base: BaseWorld) -> tuple[dict[str, int], dict[str, str]]:
    """The certificate catalogue: path -> not_after in minutes from T0, and path -> subject."""
    certs, subjects = dict(base.certs), dict(base.subjects)
    for spec in task.injection.certs:
        certs[spec.path] = minutes_from(task.incident.start, spec.not_after)
        if spec.subject is not None:
            subjects[spec.path] = spec.subject
        subjects.setdefault(spec.path, topo.cert_subject(spec.path))
    return certs, subjects


def _event_changes(spec: EventSpec) -> list[Change]:
    """What a history event does to the world: decoys are real state (§6.10)."""
    at = max(topo.HISTORY_START, -spec.minutes_before)
    s = spec.service
    if spec.kind == "config_change" and spec.key and spec.value is not None:
        return [Change(at, 0, "edit_both", s, spec.key, parse_value(spec.value))]
    if spec.kind == "deploy" and spec.value:
        return [
            Change(at, 0, "edit_both", s, "deploy.version", spec.value),
            Change(at, 1, "rollout", s),
        ]
    if spec.kind == "scale" and spec.value is not None:
        return [Change(at, 0, "edit_both", s, "deploy.replicas", int(spec.value))]
    if spec.kind == "restart":
        return [Change(at, 1, "blip", s)]
    return []  # job and cert_renewed events announce; their effects are separate entries


def _fault_event(
    task: Task, base: BaseWorld, registry: dict[str, list[Version]], at: int
) -> list[Event]:
    """The audit event of the injection itself, unless the task hides it (§6.9)."""
    if task.noise.fault_event == "hidden":
        return []
    events = []
    for edit in task.injection.config:
        if edit.minutes_before is not None:
            continue  # edits made days earlier (K02) have no event at the onset
        s, old = edit.service, base.files[edit.service].values[edit.key]
        if edit.key == "deploy.version":
            version = next(v for v in registry[s] if v.name == edit.value)
            changelog = version.props.get("changelog", "")
            suffix = f" (changelog: {changelog})" if changelog else ""
            text = f"deploy {s} {old} -> {edit.value}{suffix}"
            events.append(Event(at, s, "deploy", text))
        elif edit.key == "deploy.replicas":
            events.append(
                Event(at, s, "scale", f"scale {s} {old} -> {edit.value} (by hpa-controller)")
            )
        else:
            events.append(
                Event(at, s, "config_change", f"config change {s}: {edit.key} (by deploy-bot)")
            )
    return events


def _base_events(base: BaseWorld) -> list[Event]:
    events = []
    for s in topo.SERVICES:
        previous = None
        for name, before in base.registry[s]:
            text = f"deploy {s} {previous} -> {name}" if previous else f"deploy {s} {name}"
            events.append(Event(-before, s, "deploy", f"{text} (by release-bot)"))
            previous = name
    return events


def build_world(task: Task) -> World:
    """A fresh world for the task, with nothing computed yet."""
    base = task.base_world()
    onset = max(topo.HISTORY_START, onset_minute(task))
    registry = registry_for(task, base)
    changes: list[Change] = []
    for edit in task.injection.config:
        at = onset if edit.minutes_before is None else max(topo.HISTORY_START, -edit.minutes_before)
        changes.append(Change(at, 0, "edit_both", edit.service, edit.key, parse_value(edit.value)))
        if edit.key == "deploy.version":
            changes.append(Change(at, 1, "rollout", edit.service))
    history = [*task.injection.events, *task.noise.decoy_events]
    events = _base_events(base) + _fault_event(task, base, registry, onset)
    for spec in history:
        changes += _event_changes(spec)
        events.append(Event(-spec.minutes_before, spec.service, spec.kind, spec.text))
    effects = [
        Effect(e.service, e.effect, e.value, e.from_min, e.to_min) for e in task.noise.decoy_effects
    ]
    certs, subjects = certs_for(task, base)
    return World(
        files=base.files,
        registry=registry,
        certs=certs,
        subjects=subjects,
        ingress_rps=base.ingress_rps,
        changes=changes,
        effects=effects,
        events=events,
        t0=task.incident.start,
    )


_TEMPLATES: dict[tuple[str, str], World] = {}


def world_at_t0(task: Task) -> World:
    """A world advanced to T0, forked from a per-task template computed once per process."""
    key = (task.id, task.model_dump_json())
    template = _TEMPLATES.get(key)
    if template is None:
        template = build_world(task)
        template.at(0)
        _TEMPLATES[key] = template
    return template.fork()


def clear_templates() -> None:
    """Forgets every per-task history (for measuring cold starts)."""
    _TEMPLATES.clear()
