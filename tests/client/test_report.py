"""Aggregates and tables over hand-made grades with known answers."""

from __future__ import annotations

import json

import pytest

from srez_client.results.report import (
    aggregate,
    aggregate_table,
    build_report,
    leaderboard_table,
    pass_hat_k,
    render_table,
    report_json,
    runs_table,
)
from srez_client.results.table import clean


def grade(
    task: str,
    *,
    agent: str = "scripted",
    model: str = "none",
    seed: int = 0,
    difficulty: str = "easy",
    kind: str = "conn_pool_exhaustion",
    reward: float = 1.0,
    resolved: bool = True,
    passed: bool = True,
    safe: bool = True,
    collateral: list[str] | None = None,
    invalid: int = 0,
    steps: int = 6,
    ttm: int | None = 3,
    svc: bool = True,
    kind_ok: bool = True,
    evidence: float = 1.0,
) -> dict[str, object]:
    checks = {name: {"pass": True, "reasons": []} for name in ("valid", "func", "intent", "rca")}
    checks["safe"] = {"pass": safe, "reasons": [] if safe else ["scale(payments, 0)"]}
    return {
        "schema_version": 1,
        "task_id": task,
        "agent": agent,
        "model": model,
        "run_seed": seed,
        "difficulty": difficulty,
        "fault_kind": kind,
        "steps": steps,
        "max_steps": 20,
        "expert_steps": 6,
        "checks": checks,
        "resolved": resolved,
        "passed": passed,
        "reward": {
            "total": reward,
            "weights": {"fix": 0.35, "rca": 0.25, "evidence": 0.15, "minimal": 0.15, "eff": 0.1},
            "components": {
                "fix": 1.0,
                "rca": 1.0,
                "evidence": evidence,
                "minimal": 1.0,
                "eff": 1.0,
            },
        },
        "metrics": {
            "end_reason": "submit",
            "invalid_actions": invalid,
            "max_repeat_invalid": 0,
            "mutations": 1,
            "restarts": [],
            "evidence_witnessed": [],
            "time_to_mitigate_min": ttm,
            "declared": None,
            "rca_service_correct": svc,
            "rca_kind_correct": kind_ok,
            "collateral_keys": collateral or [],
            "unneeded_restarts": 0,
        },
        "diff": "",
        "reference_patch": "",
        "ground_truth": {},
    }


K1, K2 = "conn_pool_exhaustion", "disk_full"
FOUR = [
    grade("sre-001", kind=K1, reward=1.0, steps=6, ttm=3),
    grade(
        "sre-002",
        kind=K2,
        reward=0.5,
        passed=False,
        steps=10,
        invalid=2,
        ttm=5,
        kind_ok=False,
        evidence=0.5,
        collateral=["payments:logging.level"],
    ),
    grade(
        "sre-003",
        difficulty="hard",
        kind=K1,
        reward=0.25,
        resolved=False,
        passed=False,
        safe=False,
        steps=20,
        invalid=4,
        ttm=None,
        svc=False,
        kind_ok=False,
        evidence=0.0,
    ),
    grade(
        "sre-004",
        difficulty="medium",
        kind=K2,
        reward=0.0,
        resolved=False,
        passed=False,
        steps=4,
        ttm=None,
        svc=False,
        evidence=0.25,
    ),
]


def test_aggregate_known_answers() -> None:
    agg = aggregate(FOUR)
    assert agg.n == 4
    assert agg.resolved_at_1 == 0.5
    assert agg.passed_at_1 == 0.25
    assert agg.mean_reward == 0.4375
    assert agg.rca_service == 0.5
    assert agg.rca_kind == 0.5
    assert agg.evidence == 0.4375
    assert agg.unsafe == 0.25
    assert agg.collateral == 0.25
    assert agg.invalid_rate == 0.15  # 6 invalid of 40 steps
    assert agg.mean_steps == 10.0
    assert agg.mean_ttm == 4.0
    assert agg.n_ttm == 2
    assert agg.pass_hat_k == {}  # one run per task


def test_aggregate_of_nothing_is_zero() -> None:
    agg = aggregate([])
    assert agg.n == 0
    assert agg.mean_reward == 0.0
    assert agg.mean_ttm is None


def test_breakdown_by_difficulty_and_kind() -> None:
    (agent,) = build_report(FOUR).agents
    assert set(agent.by_difficulty) == {"easy", "medium", "hard"}
    assert agent.by_difficulty["easy"].n == 2
    assert agent.by_difficulty["easy"].mean_reward == 0.75
    assert agent.by_difficulty["hard"].unsafe == 1.0
    assert agent.by_difficulty["medium"].rca_kind == 1.0
    assert list(agent.by_fault_kind) == [K1, K2]
    assert agent.by_fault_kind[K1].mean_reward == 0.625
    assert agent.by_fault_kind[K2].collateral == 0.5
    assert agent.by_fault_kind[K2].invalid_rate == pytest.approx(2 / 14, abs=1e-6)


def test_breakdown_omits_empty_tiers() -> None:
    (agent,) = build_report(FOUR[:2]).agents
    assert list(agent.by_difficulty) == ["easy"]


def test_pass_hat_k_math() -> None:
    runs = {"a": [True, True, True, False, False], "b": [True] * 5}
    assert pass_hat_k(runs, 1) == 0.8  # (3/5 + 1) / 2
    assert pass_hat_k(runs, 3) == 0.55  # (C(3,3)/C(5,3) + 1) / 2 = (0.1 + 1) / 2
    assert pass_hat_k(runs, 5) == 0.5  # (0 + 1) / 2
    assert pass_hat_k({"c": [True, False]}, 2) == 0.0
    assert pass_hat_k({"c": [True, True, False, True]}, 2) == 0.5  # C(3,2)/C(4,2)
    with pytest.raises(ValueError, match="fewer"):
        pass_hat_k(runs, 6)
    with pytest.raises(ValueError, match="k >= 1"):
        pass_hat_k(runs, 0)


def test_aggregate_reports_pass_hat_k_up_to_the_fewest_seeds() -> None:
    a = [grade("sre-001", seed=s, passed=s < 3) for s in range(5)]
    b = [grade("sre-002", seed=s) for s in range(5)]
    assert aggregate(a + b).pass_hat_k == {1: 0.8, 3: 0.55, 5: 0.5}
    three = [g for g in a + b if int(str(g["run_seed"])) < 3]
    assert aggregate(three).pass_hat_k == {1: 1.0, 3: 1.0}


def test_report_groups_agents_and_ranks_the_leaderboard() -> None:
    worse = [grade("sre-001", agent="random", reward=0.1, passed=False)]
    llm = [grade("sre-001", agent="llm", model="anthropic/claude-x", reward=0.9)]
    report = build_report(FOUR + worse + llm)
    assert [(a.agent, a.model) for a in report.agents] == [
        ("llm", "anthropic/claude-x"),
        ("random", "none"),
        ("scripted", "none"),
    ]
    assert report.leaderboard == ["llm (anthropic/claude-x)", "scripted", "random"]
    table = leaderboard_table(report)
    lines = table.splitlines()
    assert lines[0].split()[:5] == ["rank", "agent", "vs", "next", "n"]
    assert lines[2].split()[:2] == ["1", "llm"]
    assert lines[4].split()[:3] == ["3", "random", "-"]


def test_report_json_is_plain_json() -> None:
    report = build_report([grade("sre-001", seed=s) for s in range(3)])
    data = json.loads(json.dumps(report_json(report)))
    overall = data["agents"][0]["overall"]
    assert overall["n"] == 3
    assert overall["pass_hat_k"] == {"1": 1.0, "3": 1.0}
    assert data["leaderboard"] == ["scripted"]


def test_runs_table_marks_checks() -> None:
    table = runs_table(FOUR, ascii_marks=True)
    lines = table.splitlines()
    assert lines[0].split() == [
        "task",
        "kind",
        "difficulty",
        "agent",
        "seed",
        "reward",
        "valid",
        "func",
        "safe",
        "intent",
        "rca",
        "steps",
    ]
    assert len(lines) == 2 + 4
    hard = next(line for line in lines if line.startswith("sre-003"))
    assert hard.split()[5:11] == ["0.250", "P", "P", "F", "P", "P"]
    assert "✓" in runs_table(FOUR)


def test_aggregate_table_rows() -> None:
    (agent,) = build_report(FOUR).agents
    table = aggregate_table(agent)
    names = [line.split()[0] for line in table.splitlines()[2:]]
    assert names == ["overall", "easy", "medium", "hard", "kind", "kind"]
    overall = table.splitlines()[2].split()
    assert overall[1:2] == ["4"]
    iv = agent.overall.ci["mean_reward"]
    assert " ".join(overall[2:5]) == f"0.438 [{iv[0]:.2f}, {iv[1]:.2f}]"
    lo, hi = agent.overall.ci["resolved_at_1"]
    assert overall[5:7] == ["50.0%", f"[{100 * lo:.0f}-{100 * hi:.0f}]"]


def test_tables_escape_control_characters() -> None:
    assert clean("a\x1b[2Jb\u202e") == "a\\x1b[2Jb\\u202e"
    table = render_table(["x"], [["\x1b]52;c;evil\x07"]])
    assert "\x1b" not in table
    assert "\x07" not in table


def test_render_table_alignment() -> None:
    table = render_table(["name", "n"], [["a", "1"], ["long", "100"]], right=[1])
    assert table.splitlines() == ["name    n", "----  ---", "a       1", "long  100"]


def test_report_carries_intervals_for_every_group() -> None:
    runs = [
        grade(f"sre-{i:03d}", seed=s, passed=(i + s) % 2 == 0) for i in range(6) for s in range(3)
    ]
    (agent,) = build_report(runs).agents
    for agg in [agent.overall, *agent.by_difficulty.values(), *agent.by_fault_kind.values()]:
        assert set(agg.ci) == {"mean_reward", "resolved_at_1", "passed_at_1", "pass^1", "pass^3"}
        for key, (lo, hi) in agg.ci.items():
            point = agg.pass_hat_k[int(key[5:])] if key.startswith("pass^") else getattr(agg, key)
            assert lo <= point <= hi, key
    lo, hi = agent.overall.ci["passed_at_1"]
    assert lo < agent.overall.passed_at_1 < hi
    bare = build_report(runs, bootstrap=None)
    assert bare.agents[0].overall.ci == {}
    assert bare.comparisons == []
    assert "[" not in aggregate_table(bare.agents[0])


def test_leaderboard_marks_noise_and_floors() -> None:
    def agent(name: str, reward: float) -> list[dict[str, object]]:
        return [grade(f"sre-{i:03d}", agent=name, reward=reward * (i % 2)) for i in range(20)]

    report = build_report(agent("scripted", 1.0) + agent("twin", 1.0) + agent("noop", 0.1))
    assert report.leaderboard == ["scripted", "twin", "noop"]
    assert report.floors == ["noop"]
    first, second = report.comparisons
    assert (first.a, first.b, first.within_noise, first.tasks) == ("scripted", "twin", True, 20)
    assert (second.a, second.b, second.within_noise) == ("twin", "noop", False)
    assert second.diff == 0.45
    assert second.lo > 0
    rows = [line.split() for line in leaderboard_table(report).splitlines()[2:]]
    assert [r[:3] for r in rows] == [
        ["1", "scripted", "≈"],
        ["2", "twin", ">"],
        ["3", "noop", "(floor)"],
    ]
    assert rows[2][3] == "-"
    assert leaderboard_table(report, ascii_marks=True).splitlines()[2].split()[2] == "~"
    data = json.loads(json.dumps(report_json(report)))
    assert data["comparisons"][1] == {
        "a": "twin",
        "b": "noop",
        "diff": 0.45,
        "lo": second.lo,
        "hi": second.hi,
        "within_noise": False,
        "tasks": 20,
    }
    assert data["agents"][0]["overall"]["ci"]["mean_reward"] == list(
        report.agents[0].overall.ci["mean_reward"]
    )
