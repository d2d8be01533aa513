"""Placing a task of the typical world into a drawn world (docs/environment.md §6.15).

The matrix describes each incident in the typical world's terms: ``payments db.pool_max = 2``,
``rollback payments 2.4.0``, ``cert_file = /etc/certs/db-2024.pem``. :func:`place` rewrites the
task for a drawn world, field by field and with the meaning of each field in mind:

* names (versions, certificate files, ports) go through the world's maps;
* an injected limit that breaks a threshold sits at a drawn share of this world's threshold
  (:func:`_shortfall`: 30 to 70 % of what the world needs, or the typical task's share if that is
  larger), so it is too low for this world's traffic rather than low in absolute terms, and, in
  the generator's second pass, deeper where this world's headroom absorbs that share; the cache
  keeps a drawn share of its working set the same way; values that break no threshold (a wrong
  port, a bad nameserver, a flag, zero replicas) stay as the row writes them;
* the reference fix restores this world's own base value, never the typical one;
* witnesses quote what this world's tools will show, and the title and brief are the page this
  world's edge writes (:mod:`srez_env.generator.pager`), never the row's words.

The result is checked by :mod:`srez_env.generator.verify`; a world in which the incident no
longer behaves as its row declares is refused and the next world is drawn.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from srez_env.generator.pager import page
from srez_env.generator.verify import fault_spares_slo
from srez_env.generator.worlds import TYPICAL_PORTS, WorldDraw
from srez_env.sim.baseline import CANONICAL, Baseline
from srez_env.sim.scenario import world_at_t0
from srez_env.task import Task
from srez_env.world import topology as topo
from srez_env.world.conffile import Value, parse_value, render_value
from srez_env.world.schema import BASE_FILES

Json = dict[str, Any]


def port_kind(service: str, key: str) -> str | None:
    """Which server a port key names: ``http`` (auth and payments), ``db`` or ``cache``."""
    if key == "server.port":
        return {"db": "db", "cache": "cache"}.get(service, "http")
    if key == "db.port":
        return "db"
    if key == "cache.port":
        return "cache"
    if key.startswith("upstream.") and key.endswith(".port"):
        return "http"
    return None


def _threshold(base: Baseline, service: str, key: str) -> float | None:
    """The value of ``key`` at which its rule stops firing, in ``base``'s world."""
    need = base.load_need(service, key)
    if need is not None:
        return need
    for edge in topo.EDGES:
        if edge.client == service and edge.timeout_key == key and not edge.soft:
            return 2 * base.p99[edge.server]
    return None


def map_injected(draw: WorldDraw, service: str, key: str, raw: str, depth: int = 0) -> str:
    """The world's equivalent of an injected value of the typical world; ``depth`` moves an
    injected limit from its drawn share toward the row's own (:func:`_shortfall`)."""
    value = parse_value(raw)
    kind = port_kind(service, key)
    if kind is not None and isinstance(value, int):
        return str(draw.ports[kind] + value - TYPICAL_PORTS[kind])
    if key == "deploy.version":
        return draw.versions[service].get(raw, raw)
    if key == "tls.cert_file":
        return _cert_path(draw, raw)
    if key == "server.max_connections" and isinstance(value, int):
        world_needed = _connections_needed(draw.value)
        typical_needed = _connections_needed(lambda s, k: BASE_FILES[s].values[k])
        share = _shortfall(draw, key, value / typical_needed, depth)
        return str(max(1, math.floor(world_needed * share)))
    if key == "memory.maxmemory_mb" and isinstance(value, int):
        share = _shortfall(draw, key, value / topo.CACHE_WORKING_SET_MB, depth)
        return str(max(1, math.floor(topo.CACHE_WORKING_SET_MB * share)))
    threshold = _threshold(CANONICAL, service, key)
    if threshold is not None and isinstance(value, int):
        world = _threshold(draw.baseline, service, key) or threshold  # same key, same rule
        return str(max(1, math.floor(world * _shortfall(draw, key, value / threshold, depth))))
    return raw


MILDEST_SHORTFALL: Final = 0.7
"""The largest share of its threshold an injected limit may keep (a limit at 70 % of what the
traffic needs still fails it)."""
DEEPEST_SHORTFALL: Final = 0.3
"""The smallest share drawn, unless the typical task's own is larger: a limit cut to a sliver
of its need stands out of every world."""


DEEPENING_STEPS: Final = 6
"""The steps from the drawn share to the row's own (:func:`_shortfall`, :func:`place`)."""


def _shortfall(draw: WorldDraw, key: str, typical: float, depth: int = 0) -> float:
    """How far below its threshold an injected limit sits in this world: drawn log-uniformly
    between :data:`DEEPEST_SHORTFALL` (or the typical task's share, if larger) and
    :data:`MILDEST_SHORTFALL`. A mild shortfall in a busy
    world is a value that is healthy in a quieter one, so no range of healthy values gives the
    fault away (docs/environment.md §6.16).

    ``depth`` (up to :data:`DEEPENING_STEPS`) moves the share log-linearly from the drawn one to
    the typical task's own, the share the row's author wrote to break the typical world: a world
    with the headroom to absorb the drawn shortfall gets a deeper one (§6.15)."""
    if typical >= MILDEST_SHORTFALL or depth >= DEEPENING_STEPS:
        return typical
    rng = random.Random(f"srez-shortfall:{draw.seed}:{key}")
    deepest = max(typical, DEEPEST_SHORTFALL)
    drawn = math.exp(rng.uniform(math.log(deepest), math.log(MILDEST_SHORTFALL)))
    return drawn * math.pow(typical / drawn, depth / DEEPENING_STEPS)


def _connections_needed(value: Callable[[str, str], Value]) -> int:
    """K04's threshold: the db clients' pools plus the reserved connections."""
    pools = sum(
        int(value(s, "deploy.replicas")) * int(value(s, "db.pool_max"))
        for s in ("auth", "payments")
    )
    return pools + topo.DB_CONNECTION_RESERVE


def _cert_path(draw: WorldDraw, path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return f"/etc/certs/{draw.cert_files.get(name, name)}"


def _fix_value(draw: WorldDraw, service: str, key: str, raw: str) -> str:
    """A reference fix restores this world's base value where the typical one restored its."""
    typical = render_value(BASE_FILES[service].values[key])
    if key == "tls.cert_file":
        return _cert_path(draw, raw)
    if raw == typical:
        return render_value(draw.value(service, key))
    return map_injected(draw, service, key, raw)


def _token_replacer(mapping: Mapping[str, str]) -> Callable[[str], str]:
    """Replaces whole tokens (not inside a longer version or word) in one pass."""
    if not mapping:
        return lambda text: text
    alternatives = "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.])(?:{alternatives})(?![\w])(?!\.\d)")
    return lambda text: pattern.sub(lambda m: mapping[m.group(0)], text)


def place(task: Task, draw: WorldDraw, deepen: bool = False) -> Task:
    """The task ``task`` (written for the typical world) rewritten for ``draw``'s world.

    With ``deepen``, a fault whose injected limits leave the gateway SLO holding at T0 at their
    drawn share (a starved cache breaks it only through a database with no CPU to spare) gets
    them deeper, step by step toward the row's own share, and keeps the mildest that breaks the
    SLO; if none does, the drawn share stays and verification refuses the world (§6.15).
    """
    placed = _rewritten(task, draw, 0)
    if deepen and fault_spares_slo(placed):
        tried = placed.injection
        for depth in range(1, DEEPENING_STEPS + 1):
            deeper = _rewritten(task, draw, depth)
            if deeper.injection == tried:
                continue  # the same value after rounding, or no limit to deepen
            tried = deeper.injection
            if not fault_spares_slo(deeper):
                placed = deeper
                break
    written = page(placed)
    incident = placed.incident.model_copy(update={"brief": written.brief})
    return placed.model_copy(update={"incident": incident, "title": written.title})


def _rewritten(task: Task, draw: WorldDraw, depth: int) -> Task:
    """:func:`place`'s work but the page, with the injected limits at ``depth``."""
    versions: dict[str, str] = {}
    for per_service in draw.versions.values():
        versions.update(per_service)
    names = _token_replacer({**versions, **draw.cert_files})
    data: Json = task.model_dump(mode="json")

    injected: dict[tuple[str, str], tuple[str, str]] = {}
    for edit in data["injection"]["config"]:
        new = map_injected(draw, edit["service"], edit["key"], edit["value"], depth)
        injected[edit["service"], edit["key"]] = (edit["value"], new)
        edit["value"] = new
    for spec in data["injection"]["versions"]:
        spec["version"] = draw.versions[spec["service"]].get(spec["version"], spec["version"])
    for spec in data["injection"]["certs"]:
        spec["path"] = _cert_path(draw, spec["path"])
    for event in [*data["injection"]["events"], *data["noise"]["decoy_events"]]:
        event["text"] = names(event["text"])
        if event["kind"] == "deploy" and event.get("value"):
            event["value"] = draw.versions[event["service"]].get(event["value"], event["value"])
    for action in data["reference_fix"]:
        args = action["args"]
        s = args["service"]
        if action["tool"] == "set_config":
            args["value"] = _fix_value(draw, s, args["key"], args["value"])
        elif action["tool"] == "rollback":
            args["version"] = draw.versions[s].get(args["version"], args["version"])
        elif (
            action["tool"] == "scale"
            and args["replicas"] == BASE_FILES[s].values["deploy.replicas"]
        ):
            args["replicas"] = int(draw.value(s, "deploy.replicas"))
    typical_t0 = world_at_t0(task).at(0).files
    for item in data["ground_truth"]["required_evidence"]:
        if item.get("witness") is not None:
            item["witness"] = _witness(item, typical_t0, draw, injected, names)
    data["world"] = draw.spec.model_dump(mode="json")
    return Task.model_validate(data)


def _witness(
    item: Json,
    typical_t0: Mapping[str, Any],
    draw: WorldDraw,
    injected: Mapping[tuple[str, str], tuple[str, str]],
    names: Callable[[str], str],
) -> str:
    text: str = names(item["witness"])
    service = item["match"].get("service")
    if item["tool"] == "get_config" and service and " = " in text:
        short, value = text.split(" = ", 1)
        for key, typical in typical_t0[service].values.items():
            if key.rsplit(".", 1)[-1] == short and render_value(typical) == value:
                if (service, key) in injected:
                    return f"{short} = {injected[service, key][1]}"
                if key == "tls.cert_file":
                    return f"{short} = {_cert_path(draw, value)}"
                return f"{short} = {render_value(draw.value(service, key))}"
        return text
    found = re.fullmatch(r"context deadline exceeded \(timeout=(\d+)ms\)", text)
    if found:
        for (_s, _key), (old, new) in injected.items():
            if old == found.group(1):
                return f"context deadline exceeded (timeout={new}ms)"
    for (_s, _key), (old, new) in injected.items():  # a log line quoting the injected value
        text = re.sub(rf"(?<==){re.escape(old)}(?![\d.])", new, text)
    found = re.fullmatch(r"scale (\w+) (\d+) -> 0", text)
    if found:
        return f"scale {found.group(1)} {draw.value(found.group(1), 'deploy.replicas')} -> 0"
    return text
