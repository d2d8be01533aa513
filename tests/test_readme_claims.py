"""What the docs say about the command line and the grade agrees with the code (the README's
details live in docs/evaluate.md and docs/tasks.md)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from srez_client.backends.registry import BACKEND_NAMES
from srez_client.cli.main import build_parser
from srez_env.world import topology as topo

DOCS = Path(__file__).resolve().parents[1] / "docs"
EVALUATE = (DOCS / "evaluate.md").read_text()
TASKS = (DOCS / "tasks.md").read_text()
SPEC = (DOCS / "environment.md").read_text()


def _actions(parser: argparse.ArgumentParser, *path: str) -> list[str]:
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def test_docs_eval_backend_lists_every_backend() -> None:
    sentence = re.search(r"`--backend` accepts (.+?)\.", EVALUATE.replace("\n", " "))
    assert sentence is not None
    assert "come later" not in EVALUATE
    for name in BACKEND_NAMES:
        assert f"`{name}`" in sentence.group(1), name


def test_docs_func_check_names_the_window_the_grader_checks() -> None:
    first = topo.SOAK_MINUTES - 4  # checks.py: range(end - 4, end + 1), five minutes
    for page in (TASKS, SPEC):
        (row,) = [line for line in page.splitlines() if line.startswith("| `func` |")]
        assert f"the soak (minutes {first} to {topo.SOAK_MINUTES} after submit" in row
        assert "through a 10-minute soak" not in page


def test_docs_lists_every_runs_action_and_the_completion_command() -> None:
    parser = build_parser()
    for action in _actions(parser, "runs"):
        assert re.search(rf"srez runs [^\n]*\b{action}\b", EVALUATE), action
    assert "srez completion bash" in EVALUATE and "srez completion zsh" in EVALUATE
