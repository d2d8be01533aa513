"""The expert's evidence per fault kind (docs/environment.md §3.5 "expert evidence", witnesses per
§6.8), read from ``playbook.yaml``.

A kind's reads are templates: this module picks the variant that fits a row, fills in the row's
names and values, and numbers the items ``E1..En``. The file's header documents the variants,
the placeholders and the fields of an item.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources
from typing import Any, Final

import yaml

from srez_env.generator.matrix import BASE_VERSION, Json, Row
from srez_env.world.schema import BASE_FILES

_SERVER_PORTS: Final = {
    s: str(file.values["server.port"])
    for s, file in BASE_FILES.items()
    if "server.port" in file.values
}
_BASE_REPLICAS: Final = {s: str(file.values["deploy.replicas"]) for s, file in BASE_FILES.items()}


@functools.cache
def _kinds() -> Mapping[str, Any]:
    """Per kind code: ``roles`` (optional) and ``variants``; read on first use (root-only data
    in the run image, like the matrix)."""
    text = resources.files(__package__).joinpath("playbook.yaml").read_text(encoding="utf-8")
    data: Mapping[str, Any] = yaml.safe_load(text)
    return data


def _matches(when: Mapping[str, Any] | None, facts: Mapping[str, object]) -> bool:
    """Whether every fact ``when`` names has its value (or one of its values)."""
    for name, wanted in (when or {}).items():
        options = wanted if isinstance(wanted, list) else [wanted]
        if facts[name] not in options:
            return False
    return True


def _placeholders(row: Row, roles: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    names = {
        "root": row.root,
        "running": BASE_VERSION.get(row.root, ""),
        "replicas": _BASE_REPLICAS.get(row.root, ""),
        **{f"port_{s}": port for s, port in _SERVER_PORTS.items()},
    }
    if row.inject:
        ((_, key, value),) = row.inject
        dep = key.split(".")[-2]
        names |= {
            "key": key,
            "value": value,
            "setting": key.split(".")[-1],
            "dep": dep,
            "dep_port": _SERVER_PORTS.get(dep, ""),
        }
    for role, by_root in roles.items():
        names[role] = by_root[row.root] if row.root in by_root else by_root["*"]
    return names


def _item(template: Mapping[str, Any], names: Mapping[str, str], dedup: bool) -> Json:
    """One evidence item (before its id) from its template and the row's names."""

    def fill(text: str) -> str:
        return text.format_map(names)

    item: Json = {
        "tool": template["tool"],
        "match": {k: fill(str(v)) for k, v in template.get("match", {}).items()},
    }
    oracle = dict(template.get("oracle", {}))
    if dedup and "dedup_grep" in template:
        oracle = {"grep": fill(template["dedup_grep"]), "since": "2h"}
    if oracle:
        item["oracle_args"] = oracle
    if "witness" in template:
        item["witness"] = fill(template["witness"])
    item["why"] = fill(template["why"])
    return item


def playbook(row: Row) -> list[Json]:
    """The required evidence of a row, with ids E1..En and the row's ``why`` overrides."""
    kind = _kinds()[row.kind]
    facts = {"root": row.root, "tier": row.tier, "hard": row.tier == "H"}
    # a release that multiplies its queries (N+1) rather than failing its requests
    facts["n_plus_one"] = any(float(v["props"].get("query_mult", 1)) > 1 for v in row.versions)
    facts["key"] = row.inject[0][1] if row.inject else None
    variant = next(v for v in kind["variants"] if _matches(v.get("when"), facts))
    templates = list(variant["evidence"])
    for extra in variant.get("extra", ()):
        if _matches(extra["when"], facts):
            templates.insert(extra["at"], extra["item"])
    names = _placeholders(row, kind.get("roles", {}))
    out = [
        {"id": f"E{n}", **_item(template, names, row.dedup)}
        for n, template in enumerate(templates, start=1)
    ]
    for item in out:
        item["why"] = row.why.get(item["id"], item["why"])
    unknown = set(row.why) - {item["id"] for item in out}
    if unknown:
        msg = f"{row.id}: why overrides for unknown evidence ids {sorted(unknown)}"
        raise ValueError(msg)
    return out
