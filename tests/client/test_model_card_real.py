"""``make model-card``'s run of one task against the real model server (bench/model_card.py):
the same ``srez eval`` a sitting makes, cut short by a cost cap (the agent then submits), gives
the grade the ledger keeps."""

from __future__ import annotations

from pathlib import Path

from bench import model_card
from bench.llama_server import LlamaServer

SHORT = {
    "SREZ_LLM_INPUT_COST_PER_TOKEN": "0.001",
    "SREZ_LLM_COST_CAP_USD": "3",  # some three model calls: the prompt alone is 1,300 tokens
}


def test_one_task_of_the_real_model_gives_its_grade(llama: LlamaServer, tmp_path: Path) -> None:
    grade, wall = model_card.play(llama, "sre-039", tmp_path / "results", SHORT)
    assert grade["task_id"] == "sre-039"
    assert grade["agent"] == "llm-json"
    assert 0.0 <= grade["reward"]["total"] <= 1.0
    assert set(grade["checks"]) == {"func", "rca", "intent", "safe", "valid"}
    assert wall > 0
    (run,) = (tmp_path / "results" / "sre-039").glob("*/llm-json/*")
    assert (run / "result.json").is_file()
