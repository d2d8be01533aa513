"""The ``walker`` fixture: a newcomer in a fresh clone, with the files the README's examples
assume the reader has written (``my_agents.py``, ``my-actions.jsonl``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from walk_kit import Walker
from walk_steps import MY_AGENTS, expert_moves


@pytest.fixture
def walker(tmp_path: Path) -> Iterator[Walker]:
    walker = Walker.fresh(tmp_path)
    (walker.clone / "my_agents.py").write_text(MY_AGENTS)
    moves = "".join(json.dumps(move) + "\n" for move in expert_moves("sre-007"))
    (walker.clone / "my-actions.jsonl").write_text(moves)
    try:
        yield walker
    finally:
        walker.stop_local_runs()
    for line, seconds in sorted(walker.seconds.items(), key=lambda item: -item[1])[:5]:
        print(f"{seconds:6.1f} s  {line}")  # shown with -s: where the walk's minutes go
