"""The fault catalogue (srez_env.catalogue, docs/environment.md §3.5): one entry per kind, held to
every place that acts on a kind, and no module keeps a table of kinds of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from envkit import started

from conftest import TASKS
from literal_kit import copies
from srez_env import catalogue
from srez_env.actions import FAULT_GLOSSARY
from srez_env.baselines.heuristic import SIGNATURES
from srez_env.baselines.memorised import KEY_KINDS
from srez_env.catalogue import CATALOGUE, FaultEntry
from srez_env.generator import matrix, playbook
from srez_env.sim import rules
from srez_env.task import Task
from srez_env.vocab import FAULT_KINDS
from srez_env.world import topology as topo

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("env", "daemon", "client", "core")
ALLOWED = {
    Path("env/srez_env/catalogue.py"),  # the table
    Path("env/srez_env/vocab.py"),  # FaultKind: the Literal the types check, held below
}
KINDS = {entry.kind for entry in CATALOGUE}


def test_the_entries_are_the_fourteen_kinds_in_code_order() -> None:
    assert [e.code for e in CATALOGUE] == [f"K{n:02d}" for n in range(1, 15)]
    assert (*(e.kind for e in CATALOGUE), "none") == FAULT_KINDS
    assert all(e.glossary and e.fires_when and e.roots for e in CATALOGUE)
    for entry in CATALOGUE:
        assert set(entry.roots) <= set(topo.SERVICES), entry.kind


def test_every_place_that_acts_on_a_kind_reads_the_catalogue() -> None:
    assert list(rules.RULES) == [e.kind for e in CATALOGUE]  # a predicate per entry
    assert FAULT_GLOSSARY == catalogue.GLOSSARY and tuple(FAULT_GLOSSARY) == FAULT_KINDS
    assert SIGNATURES is catalogue.SIGNATURES and KEY_KINDS is catalogue.DRIFT_KEYS
    assert matrix.load().kind_name == {
        **{e.code: e.kind for e in CATALOGUE},
        catalogue.CONTROL_CODE: "none",
    }
    assert set(playbook._kinds()) == set(catalogue.KIND_NAMES)


def test_ranks_order_every_kind_once() -> None:
    """A rank taken twice would leave the heuristic's or the memorised baseline's order to the
    sort's stability, not to the catalogue."""
    assert sorted(e.signature.rank for e in CATALOGUE) == list(range(len(CATALOGUE)))
    assert sorted(e.drift.rank for e in CATALOGUE) == list(range(len(CATALOGUE)))
    assert [kind for kind, _, _ in SIGNATURES] == [
        e.kind for e in sorted(CATALOGUE, key=lambda e: e.signature.rank)
    ]


def test_the_specification_table_is_the_catalogue() -> None:
    text = (ROOT / "docs/environment.md").read_text()
    table = re.findall(r"^\| (K\d\d) \| `(\w+)` \| (.+) \|$", text, flags=re.M)
    assert table == [(e.code, e.kind, e.fires_when) for e in CATALOGUE]


ROOTS_BY_TOPOLOGY = {
    "wrong_upstream_port": {e.client for e in topo.EDGES} | {e.server for e in topo.EDGES},
    "expired_tls_cert": set(topo.TLS_SERVERS),
    "conn_pool_exhaustion": set(rules.DB_CLIENTS),
    "db_max_connections_low": {"db"},
    "memory_leak": set(topo.SERVICES),
    "bad_deploy": set(topo.SERVICES),
    "disk_full": {"db"},
    "dns_misconfig": set(rules.RESOLVING),
    "cache_eviction_stampede": {"cache"},
    "rate_limit_misconfig": {"gateway", "auth"},
    "feature_flag_regression": set(rules.BAD_FLAGS),
    "dependency_timeout": {e.client for e in topo.EDGES if not e.soft},
    "replicas_zero": set(topo.SERVICES),
    "cpu_throttling": set(topo.SERVICES),
}
"""Where each rule can fire, read from the topology the predicates loop over."""


@pytest.mark.parametrize("entry", CATALOGUE, ids=lambda e: e.kind)
def test_an_entry_roots_its_kind_where_the_rule_can_fire(entry: FaultEntry) -> None:
    assert set(entry.roots) == ROOTS_BY_TOPOLOGY[entry.kind]
    drawn = {row.root for row in matrix.load().rows if row.kind == entry.code}
    assert drawn <= set(entry.roots), "a matrix row roots the kind where its rule cannot fire"


def _t0_logs(task_id: str) -> str:
    task = next(t for t in TASKS if t.id == task_id)
    env = started(task)
    lines = []
    for service in topo.SERVICES:
        result = env.step({"tool": "get_logs", "args": {"service": service}}).observation
        lines.append(str(result["output"]))
    return "\n".join(lines)


def _kind(task: Task) -> str:
    return task.ground_truth.root_cause.fault


EASY = {_kind(t): t.id for t in reversed(TASKS) if t.difficulty == "easy"}


@pytest.mark.parametrize("entry", CATALOGUE, ids=lambda e: e.kind)
def test_a_kind_writes_its_witness_and_signature_where_its_logs_name_it(entry: FaultEntry) -> None:
    """On an easy task the fault writes its signature lines: the heuristic's regex finds them,
    and every witness fragment the catalogue promises is one of them (or the kind's other side,
    for a certificate refused by its clients and its server)."""
    task_id = EASY.get(entry.kind) or next(
        t.id for t in TASKS if _kind(t) == entry.kind and t.difficulty != "hard"
    )
    logs = _t0_logs(task_id)
    assert re.search(entry.signature.pattern, logs), task_id
    if entry.witnesses:
        assert any(w in logs for w in entry.witnesses), task_id


def test_no_module_keeps_a_table_of_kinds_of_its_own() -> None:
    """A collection literal naming three or more kinds outside the catalogue (directly, or as the
    first or last item of its rows) is a copy that will drift from it, as the glossary, the
    rules' codes, the heuristic's signatures and the memorised keys once were."""
    assert copies(KINDS, allowed=ALLOWED, sources=SOURCES, row_ends=True) == []
