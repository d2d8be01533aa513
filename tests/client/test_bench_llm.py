"""``bench.llm`` measures a real agent turn through litellm against its stand-in provider."""

from __future__ import annotations

from bench.llm import llm_figures


def test_llm_figures_time_a_real_turn_beside_the_raw_request() -> None:
    figures = llm_figures(turns=3)
    assert figures["turns"] == 3
    assert figures["raw_request_p50_ms"] > 0
    # a turn makes the same request and more (litellm, the adapter, accounting): never cheaper
    assert figures["agent_turn_p50_ms"] > figures["raw_request_p50_ms"]
    assert figures["agent_turn_over_raw"] >= 1.0
