"""bench.report: the figure of a report's build time with intervals and without."""

from __future__ import annotations

from bench.report import AGENTS, SEEDS, TASKS, grades, report_figures

from srez_client.results.report import build_report


def test_bench_report_grades_make_a_full_report() -> None:
    data = grades()
    assert len(data) == len(AGENTS) * TASKS * SEEDS
    report = build_report(data)
    assert len(report.comparisons) == len(AGENTS) - 1
    assert all(a.overall.pass_hat_k.keys() == {1, 3} for a in report.agents)
    assert sorted(report.floors) == ["noop", "restart-all"]


def test_bench_report_figures_compare_both_builds() -> None:
    figures = report_figures()
    assert (figures["agents"], figures["tasks"], figures["seeds"]) == (5, 40, 3)
    assert figures["with_intervals_s"] > 0
    assert figures["without_intervals_s"] > 0
    assert figures["intervals_vs_without"] > 0
