"""``bench.llm`` measures a real agent turn (thin client, and litellm for comparison) against its
stand-in provider."""

from __future__ import annotations

from bench.llm import llm_figures


def test_llm_figures_time_a_real_turn_beside_the_raw_request() -> None:
    figures = llm_figures(turns=3)
    assert figures["turns"] == 3
    assert figures["raw_request_p50_ms"] > 0
    # figures only (never asserted as ratios: a thin turn costs about one raw request)
    assert figures["agent_turn_p50_ms"] > 0 and figures["litellm_turn_p50_ms"] > 0
    assert figures["agent_turn_over_raw"] > 0
    assert figures["litellm_import_s"] >= 0  # 0 when an earlier test imported litellm already
