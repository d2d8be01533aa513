"""``bench.thin`` produces its figures (structure only: figures are never asserted)."""

from __future__ import annotations

from bench.thin import agent_start_figures, concurrent_figures


def test_agent_start_figures_measure_both_clients() -> None:
    figures = agent_start_figures(rounds=1)
    for name in ("thin", "litellm"):
        assert set(figures[name]) == {"ready_s", "process_s", "rss_mb", "pss_mb"}
    assert set(figures["litellm_over_thin"]) == {"ready_s", "rss_mb"}


def test_concurrent_figures_run_local_llm_runs_through_the_relay_on_both_paths() -> None:
    figures = concurrent_figures((2,))
    for path in ("template", "fresh"):
        after = figures[path]["2"]
        assert after["path"] == path
        assert after["runs"] == 2 and after["completed"] == 2 and after["launch_failures"] == []
        assert after["model_requests"] == 6  # three scripted turns each, no retry
        assert {"pss_mb_per_run", "runs_per_min", "first_call_p50_s"} <= set(after)
        assert (after["template"] is not None) == (path == "template")
    assert set(figures["template"]["2"]["template"]) == {"rss_mb", "pss_mb", "cpu_s"}
    assert "pss_mb_per_run" in figures["template"]["2"]["fresh_over_template"]
    assert figures["targets"]["runs"] == 100
