"""Witnesses (docs/environment.md §5.2 test 6): each evidence witness appears in the oracle's
observation and not in an unrelated one; decoy log texts match no heuristic signature."""

from __future__ import annotations

import re

import pytest
from envkit import started

from conftest import BY_ID, TASK_IDS, TASKS
from srez_env.baselines.heuristic import SIGNATURES
from srez_env.catalogue import CATALOGUE
from srez_env.env import SREEnv
from srez_env.telemetry.logs import BENIGN


def _observe(env: SREEnv, tool: str, args: dict[str, object]) -> str:
    result = env.step({"tool": tool, "args": args}).observation
    assert result["ok"], result
    return str(result["output"])


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_every_witness_is_in_the_oracle_observation(task_id: str) -> None:
    task = BY_ID[task_id]
    env = started(task)
    for item in task.ground_truth.required_evidence:
        output = _observe(env, item.tool, {**item.match, **item.oracle_args})
        if item.witness is None:
            continue
        if item.tool == "get_config":
            assert item.witness in output.splitlines(), (item.id, item.witness)
        else:
            assert item.witness in output, (item.id, item.witness)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_log_witness_absent_when_grepping_an_unrelated_string(task_id: str) -> None:
    task = BY_ID[task_id]
    env = started(task)
    for item in task.ground_truth.required_evidence:
        if item.tool != "get_logs" or item.witness is None:
            continue
        output = _observe(env, "get_logs", {**item.match, "grep": "zzz-unrelated", "since": "3h"})
        assert item.witness not in output
    # and the evidence item does not count for such a call
    assert env.log.witnessed == [
        e.id
        for e in task.ground_truth.required_evidence
        if e.tool == "get_logs" and e.witness is None
    ]


def test_config_witness_must_be_a_whole_line() -> None:
    # "pool_max = 2" must not match "pool_max = 20": only the injected value is a witness
    task = BY_ID["sre-007"]
    env = started(task)
    env.step(
        {"tool": "set_config", "args": {"service": "payments", "key": "db.pool_max", "value": "20"}}
    )
    env.step({"tool": "get_config", "args": {"service": "payments"}})
    assert "E3" not in env.log.witnessed


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_decoy_logs_match_no_signature(task: object) -> None:
    for decoy in task.noise.decoy_logs:  # type: ignore[attr-defined]
        line = f"2025-03-14T10:00:00Z {decoy.service}-0 {decoy.level} {decoy.text}"
        assert [k for k, rx, _ in SIGNATURES if re.search(rx, line)] == [], decoy.text


def test_benign_templates_match_no_signature_or_witness() -> None:
    for service, templates in BENIGN.items():
        for template in templates:
            line = f"2025-03-14T10:00:00Z {service}-0 INFO {template.format(ms=17)}"
            assert [k for k, rx, _ in SIGNATURES if re.search(rx, line)] == [], line
            assert not any(w in line for e in CATALOGUE for w in e.witnesses), line
