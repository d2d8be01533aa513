"""bench.generator: the figure of a fresh task set's generation against verifying shipped ones."""

from __future__ import annotations

from bench.generator import GENERATOR_TARGET_S, generator_figures


def test_bench_generator_figures_time_every_set_against_the_shipped_ones() -> None:
    # Three tasks a set keep it quick; the ratios are the same arithmetic as with forty.
    figures = generator_figures(first=7, seeds=(3, 5, 9), count=3)
    assert figures["tasks_per_set"] == 3
    assert figures["shipped_verified"] == 3  # the shipped files pass the generator's contract
    per_seed = figures["set_s"]
    assert sorted(per_seed) == ["3", "5", "9"] and all(s > 0 for s in per_seed.values())
    assert figures["median_set_s"] == sorted(per_seed.values())[1]
    assert figures["first_set_s"] > 0 and figures["verify_shipped_s"] > 0
    # the ratio is of the unrounded time: within what rounding the time to 0.01 s can move it
    ratio = figures["first_set_s"] / GENERATOR_TARGET_S
    assert abs(figures["first_vs_target"] - ratio) <= 0.005 / GENERATOR_TARGET_S + 0.0005
    assert figures["median_vs_verify_shipped"] > 0
