"""The README walk: the command line with no daemon (tasks, inline evals, play, generated sets,
results, completion)."""

from __future__ import annotations

import json

from walk_kit import Walker
from walk_steps import COMMANDS


def test_walk_the_command_line(walker: Walker) -> None:
    assert not (walker.clone / "results" / "sre-007").exists(), "the clone is not fresh"
    for line, steps in COMMANDS:
        walker.walk(line, steps)
    tables = json.loads(
        walker.outputs["srez eval --agent random --tasks sre-007,sre-025 --seeds 5 --json"]
    )
    assert tables["agents"][0]["overall"]["n"] == 10
    assert len(list((walker.clone / "sets" / "h7").glob("*.yaml"))) == 6
