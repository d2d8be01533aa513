"""The grader reads an episode record, never the environment: ``srez_env.env`` imports nothing
of ``srez_env.grade`` (so the two cannot import each other), and a record is all a grade needs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from envkit import a, play, started

from conftest import BY_ID
from srez_env.errors import EpisodeError
from srez_env.grade import grade_episode

PACKAGE = Path(__file__).resolve().parents[2] / "env" / "srez_env"


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", ["env.py", "episode.py"])
def test_the_episode_side_never_imports_the_grader(module: str) -> None:
    imported = _imported_modules(PACKAGE / module)
    assert not {name for name in imported if name.startswith("srez_env.grade")}


def test_a_record_carries_who_played_and_the_whole_episode() -> None:
    env = play(BY_ID["sre-007"], [a("get_alerts")])
    record = env.record()
    assert (record.agent, record.steps_used, record.log.end_reason) == ("test", 2, "submit")
    grade = grade_episode(record)
    assert (grade.agent, grade.steps, grade.task_id) == ("test", 2, "sre-007")


def test_a_running_episode_cannot_be_graded() -> None:
    with pytest.raises(EpisodeError, match="still running"):
        grade_episode(started(BY_ID["sre-007"]).record())
