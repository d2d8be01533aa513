"""The bootstrap intervals of the report's aggregates and the paired comparison of agents."""

from __future__ import annotations

import math

from srez_client.results.bootstrap import Bootstrap, group_intervals, paired_difference


def _runs(rewards: list[list[float]]) -> list[list[tuple[float, bool, bool]]]:
    return [[(r, r >= 0.5, r >= 0.5) for r in task] for task in rewards]


HALF = _runs([[1.0] if i % 2 else [0.0] for i in range(40)])
"""40 tasks, one run each, half of them passing."""


def test_bootstrap_same_seed_same_interval_other_seed_other() -> None:
    rewards = _runs([[0.5 + 0.5 * math.sin(i)] for i in range(40)])
    assert group_intervals(rewards) == group_intervals(rewards)
    other = group_intervals(rewards, spec=Bootstrap(seed=7))
    assert other != group_intervals(rewards)
    assert abs(other["mean_reward"][0] - group_intervals(rewards)["mean_reward"][0]) < 0.05


def test_bootstrap_half_of_40_tasks_passing() -> None:
    ci = group_intervals(HALF)
    for key in ("mean_reward", "resolved_at_1", "passed_at_1"):
        lo, hi = ci[key]
        assert 0.31 <= lo <= 0.37, (key, lo)
        assert 0.63 <= hi <= 0.69, (key, hi)


def test_bootstrap_interval_holds_the_point_estimate() -> None:
    rewards = [[0.05 * ((7 * i) % 21)] for i in range(30)]
    ci = group_intervals(_runs(rewards))
    point = sum(r for (r,) in rewards) / len(rewards)
    lo, hi = ci["mean_reward"]
    assert lo < point < hi
    assert hi - lo < 0.5


def test_bootstrap_constant_sample_and_single_run_are_degenerate() -> None:
    constant = group_intervals(_runs([[0.7, 0.7]] * 12), (1, 2))
    assert constant["mean_reward"] == (0.7, 0.7)
    assert constant["pass^1"] == (1.0, 1.0)
    assert constant["pass^2"] == (1.0, 1.0)
    single = group_intervals(_runs([[0.3]]))
    assert single == {
        "mean_reward": (0.3, 0.3),
        "resolved_at_1": (0.0, 0.0),
        "passed_at_1": (0.0, 0.0),
    }
    assert group_intervals([]) == {}


def test_bootstrap_resamples_seeds_within_tasks() -> None:
    # Every task alike (2 of 3 seeds pass): over tasks alone nothing varies; the seeds do.
    alike = _runs([[1.0, 0.0, 1.0]] * 40)
    ci = group_intervals(alike, (1, 3))
    lo, hi = ci["mean_reward"]
    assert lo < 2 / 3 < hi
    assert hi - lo > 0.1
    assert ci["pass^1"] == ci["passed_at_1"]
    # pass^3 resamples tasks only: 0 for every task, whatever seeds would be drawn.
    assert ci["pass^3"] == (0.0, 0.0)
    one_task = group_intervals(_runs([[1.0, 0.0, 1.0, 0.0]]))
    assert one_task["mean_reward"][0] < 0.5 < one_task["mean_reward"][1]


def test_paired_difference_identical_agents_are_within_noise() -> None:
    a = {f"t{i}": [0.1 * (i % 10)] for i in range(40)}
    same = paired_difference(a, dict(a))
    assert same is not None
    assert (same.diff, same.lo, same.hi, same.tasks) == (0.0, 0.0, 0.0, 40)
    assert same.within_noise


def test_paired_difference_pairs_the_tasks() -> None:
    # b is a plus 0.05 on every task: unpaired the spread of the tasks would hide it.
    a = {f"t{i}": [0.02 * i] for i in range(40)}
    b = {t: [v[0] + 0.05] for t, v in a.items()}
    found = paired_difference(b, a)
    assert found is not None
    assert found.diff == 0.05
    assert found.lo == found.hi == 0.05
    assert not found.within_noise


def test_paired_difference_counts_common_tasks_only() -> None:
    a = {"t1": [1.0], "t2": [0.0], "t3": [1.0]}
    b = {"t2": [0.0], "t3": [1.0], "t9": [0.0]}
    found = paired_difference(a, b)
    assert found is not None
    assert found.tasks == 2
    assert found.diff == 0.0
    assert paired_difference({"x": [1.0]}, {"y": [1.0]}) is None


def test_bootstrap_tasks_with_unequal_runs_weigh_each_run() -> None:
    # 20 tasks of one passing run and 20 of three failing ones: 20 of 80 runs pass.
    mixed = _runs([[1.0]] * 20 + [[0.0, 0.0, 0.0]] * 20)
    ci = group_intervals(mixed, (1,))
    lo, hi = ci["passed_at_1"]
    assert lo < 0.25 < hi
    assert hi < 0.5  # a mean over tasks would centre on 0.5
    lo, hi = ci["pass^1"]  # pass^1 averages over tasks: half of them pass
    assert lo < 0.5 < hi
