"""The fixed task matrix of docs/environment.md §3.6, read from ``matrix.yaml``.

The matrix is data: one row per canonical task, in the typical world's terms, plus the tables
the rows share (fault kinds, difficulty tiers, audit-event templates, benign log streams). This
module reads it into :class:`Row` values and expands its notation (``"payments:db.port = 5433"``,
``"rollback payments 2.4.0"``, event templates) into the task file's own shapes; it decides
nothing. :mod:`srez_env.generator.expand` turns a row into a task.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from typing import Any, Final

import yaml

from srez_env.catalogue import KIND_NAMES
from srez_env.task import BASE_REGISTRY, SERVICES

Json = dict[str, Any]

DEPLOY_KINDS: Final = ("K05", "K06")
"""The kinds whose fault is a deploy: its audit event is always listed (§3.6 profiles)."""

BASE_VERSION: Final = {s: BASE_REGISTRY[s][-1] for s in SERVICES}
"""The version each service runs in the typical world (the registry's last entry)."""

_ROW_FIELDS: Final = frozenset(
    {
        "id", "kind", "root", "tier", "onset", "title", "brief", "propagation", "inject",
        "inject_before", "fix", "allowed", "restarts", "versions", "certs", "events",
        "decoy_events", "decoy_logs", "decoy_effects", "dedup", "alert_also", "why",
        "calibration",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Tier:
    """The difficulty profile of §3.6."""

    name: str
    alert_scope: str
    benign_lines_per_min: int
    max_steps: int


@dataclass(frozen=True)
class Row:
    """One row of the matrix: everything about a task that is not derived from its kind."""

    id: str
    kind: str
    root: str
    tier: str
    onset: int
    title: str
    brief: str
    """The page; ``{since}`` becomes T0 minus the onset as ``HH:MM``."""
    propagation: tuple[str, ...]
    calibration: tuple[bool, str]
    """§6.14: whether the heuristic expert passes, and whom the loudest anomaly blames."""
    inject: tuple[tuple[str, str, str], ...] = ()
    inject_minutes_before: int | None = None
    fix: tuple[Json, ...] = ()
    allowed: tuple[str, ...] = ()
    restarts: tuple[str, ...] = ()
    versions: tuple[Json, ...] = ()
    certs: tuple[Json, ...] = ()
    events: tuple[Json, ...] = ()
    decoy_events: tuple[Json, ...] = ()
    decoy_logs: tuple[Json, ...] = ()
    decoy_effects: tuple[Json, ...] = ()
    dedup: bool = False
    alert_also: tuple[str, ...] = ()
    why: Mapping[str, str] = field(default_factory=dict)
    """Per evidence id, a ``why`` that replaces the playbook's (the §4 tasks quote numbers)."""

    def injected(self, key: str) -> str:
        """The value the injection writes to the root's ``key``."""
        return next(v for s, k, v in self.inject if s == self.root and k == key)


# --------------------------------------------------------------------------- the notation


def parse_edit(text: str) -> tuple[str, str, str]:
    """``"service:key = value"`` as ``(service, key, value)``."""
    target, sep, value = text.partition(" = ")
    service, colon, key = target.partition(":")
    if not sep or not colon:
        msg = f"{text!r} must look like 'service:key = value'"
        raise ValueError(msg)
    return service, key, value


def parse_action(text: str) -> Json:
    """A reference-fix action: ``set_config service:key = value``, ``restart service``,
    ``rollback service version`` or ``scale service replicas``."""
    tool, _, rest = text.partition(" ")
    words = rest.split(" ")
    if tool == "set_config":
        service, key, value = parse_edit(rest)
        return {"tool": tool, "args": {"service": service, "key": key, "value": value}}
    if tool == "restart" and len(words) == 1:
        return {"tool": tool, "args": {"service": words[0]}}
    if tool == "rollback" and len(words) == 2:
        return {"tool": tool, "args": {"service": words[0], "version": words[1]}}
    if tool == "scale" and len(words) == 2 and words[1].isdigit():
        return {"tool": tool, "args": {"service": words[0], "replicas": int(words[1])}}
    msg = f"{text!r} is not a reference-fix action (set_config, restart, rollback or scale)"
    raise ValueError(msg)


def expand_event(spec: Mapping[str, Any], templates: Mapping[str, Json]) -> Json:
    """An audit event from a row's ``{<template>: service, before: minutes, ...}``."""
    names = [name for name in spec if name in templates]
    if len(names) != 1:
        msg = f"event {dict(spec)} must name one template of {sorted(templates)}"
        raise ValueError(msg)
    template, service = templates[names[0]], str(spec[names[0]])
    params = {**template, **spec, "service": service, "running": BASE_VERSION[service]}
    event: Json = {
        "minutes_before": params["before"],
        "service": service,
        "kind": template["kind"],
        "text": template["text"].format_map(params),
    }
    for name in ("key", "value"):
        if name in template:
            event[name] = str(template[name]).format_map(params)
    return event


def expand_version(spec: Mapping[str, Any]) -> Json:
    """A registry version from ``{service, version, before, <props>...}``."""
    props = {k: v for k, v in spec.items() if k not in ("service", "version", "before")}
    return {
        "service": spec["service"],
        "version": str(spec["version"]),
        "minutes_before": spec["before"],
        "props": props,
    }


def expand_cert(spec: Mapping[str, Any], t0: datetime) -> Json:
    """A certificate override from ``{path, not_after_min}`` (minutes from T0)."""
    return {"path": spec["path"], "not_after": t0 + timedelta(minutes=spec["not_after_min"])}


# --------------------------------------------------------------------------- the file


def _row(spec: Mapping[str, Any], data: Mapping[str, Any]) -> Row:
    unknown = sorted(set(spec) - _ROW_FIELDS)
    if unknown:
        msg = f"{spec.get('id')}: unknown row fields {unknown}"
        raise ValueError(msg)
    templates, logs = data["event_templates"], data["logs"]
    calibration = spec["calibration"]
    return Row(
        id=spec["id"],
        kind=spec["kind"],
        root=spec["root"],
        tier=spec["tier"],
        onset=spec["onset"],
        title=spec["title"],
        brief=spec["brief"],
        propagation=tuple(spec["propagation"]),
        calibration=(calibration["heuristic"], calibration["loudest"]),
        inject=tuple(parse_edit(text) for text in spec.get("inject", ())),
        inject_minutes_before=spec.get("inject_before"),
        fix=tuple(parse_action(text) for text in spec.get("fix", ())),
        allowed=tuple(spec.get("allowed", ())),
        restarts=tuple(spec.get("restarts", ())),
        versions=tuple(expand_version(v) for v in spec.get("versions", ())),
        certs=tuple(expand_cert(c, data["t0"]) for c in spec.get("certs", ())),
        events=tuple(expand_event(e, templates) for e in spec.get("events", ())),
        decoy_events=tuple(expand_event(e, templates) for e in spec.get("decoy_events", ())),
        decoy_logs=tuple(
            dict(logs[x]) if isinstance(x, str) else dict(x) for x in spec.get("decoy_logs", ())
        ),
        decoy_effects=tuple(dict(x) for x in spec.get("decoy_effects", ())),
        dedup=spec.get("dedup", False),
        alert_also=tuple(spec.get("alert_also", ())),
        why=dict(spec.get("why", {})),
    )


@dataclass(frozen=True, slots=True)
class Matrix:
    """The matrix read from ``matrix.yaml``: its rows and the tables they share."""

    t0: datetime
    """The incident start of every canonical task."""
    brief_end: str
    """The sentence a brief ends with when it does not say otherwise."""
    kind_name: Mapping[str, str]
    """Fault kind codes (``K01``) and their names (``wrong_upstream_port``), from the fault
    catalogue; ``K00`` is the control."""
    tiers: Mapping[str, Tier]
    rows: tuple[Row, ...]


@functools.cache
def load() -> Matrix:
    """The matrix, read on first use: in the run image its data is root-only (it names every
    canonical task's fault), and the agent user may still import this module."""
    text = resources.files(__package__).joinpath("matrix.yaml").read_text(encoding="utf-8")
    data: Mapping[str, Any] = yaml.safe_load(text)
    return Matrix(
        t0=data["t0"],
        brief_end=data["brief_end"],
        kind_name=KIND_NAMES,
        tiers={code: Tier(**spec) for code, spec in data["tiers"].items()},
        rows=tuple(_row(spec, data) for spec in data["rows"]),
    )
