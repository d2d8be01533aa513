"""The diagnostician (docs/environment.md §6.19) proves the evidence suffices: from observations
alone it passes at least 90 % of every tier, and it is built so that it cannot read the truth."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from srez_env.agents import make_agent
from srez_env.baselines import diagnostician
from srez_env.baselines.diagnostician import DiagnosticianAgent, Evidence, Series
from srez_env.grade import grade_episode
from srez_env.play import play_episode
from srez_env.task import Task
from srez_env.tasks import load_tasks

TASKS = load_tasks()


def pass_rates(tasks: list[Task]) -> dict[str, float]:
    """The share of each tier the diagnostician passes."""
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for task in tasks:
        graded = grade_episode(play_episode(task, DiagnosticianAgent(), name="d").record())
        tally[task.difficulty][0] += graded.passed
        tally[task.difficulty][1] += 1
    return {tier: passed / total for tier, (passed, total) in tally.items()}


def test_it_passes_at_least_90_percent_of_every_canonical_tier() -> None:
    rates = pass_rates(TASKS)
    assert set(rates) == {"easy", "medium", "hard"}
    assert all(rate >= 0.9 for rate in rates.values()), rates


def test_it_reads_observations_only() -> None:
    """The agent is made from nothing (no task, no oracle), and its module imports only the
    policy helpers, the configuration parser and the topology's public constants (the minimum
    replicas, the db's reserved connections): no task, engine, grade or world state."""
    assert make_agent("diagnostician", TASKS[0]).__class__ is DiagnosticianAgent
    tree = ast.parse(Path(diagnostician.__file__).read_text())
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("srez_env")
    }
    assert imported == {
        "srez_env.baselines.policy",
        "srez_env.world.conffile",
        "srez_env.world.topology",
    }


@pytest.mark.parametrize("resolver", ["10.9.9.9", "10.0.0.54"])
def test_a_harmless_rare_resolver_on_a_victim_is_not_blamed(resolver: str) -> None:
    """A failing service whose own dependency fails is a victim, whatever its resolver."""
    ev = Evidence()
    ev.listing = {s: {"status": "degraded"} for s in ("gateway", "payments", "db")}
    ev.configs = {
        "gateway": {"resolver.nameserver": "10.0.0.53"},
        "auth": {"resolver.nameserver": "10.0.0.53"},
        "payments": {"resolver.nameserver": resolver},
    }
    ev.metrics["payments", "error_rate"] = Series([("t", 0.9)], 0.0)
    assert diagnostician.check_resolvers(ev) is None


def test_ports_blame_the_odd_one_out() -> None:
    """The database moved while its callers agree: the database is the cause. One caller off:
    that caller is."""
    ev = Evidence()
    ev.configs = {
        "db": {"server.port": 5433},
        "auth": {"db.port": 5432},
        "payments": {"db.port": 5432},
    }
    verdict = diagnostician.check_ports(ev)
    assert verdict is not None and (verdict.service, verdict.kind) == ("db", "wrong_upstream_port")
    assert verdict.fix[0]["args"] == {"service": "db", "key": "server.port", "value": "5432"}
    ev.configs["db"]["server.port"] = 5432
    ev.configs["payments"]["db.port"] = 6432
    verdict = diagnostician.check_ports(ev)
    assert verdict is not None and verdict.service == "payments"
    assert verdict.fix[0]["args"]["value"] == "5432"
