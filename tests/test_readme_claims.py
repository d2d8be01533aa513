"""What the README says about the command line and the grade agrees with the code."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from srez_client.backends.registry import BACKEND_NAMES
from srez_client.cli.main import build_parser
from srez_env.world import topology as topo

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _actions(parser: argparse.ArgumentParser, *path: str) -> list[str]:
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def test_readme_eval_backend_lists_every_backend() -> None:
    sentence = re.search(r"`--backend` accepts (.+?)\.", README.replace("\n", " "))
    assert sentence is not None
    assert "come later" not in README
    for name in BACKEND_NAMES:
        assert f"`{name}`" in sentence.group(1), name


def test_readme_func_check_names_the_window_the_grader_checks() -> None:
    (row,) = [line for line in README.splitlines() if line.startswith("| `func` |")]
    first = topo.SOAK_MINUTES - 4  # checks.py: range(end - 4, end + 1), five minutes
    assert f"last 5 minutes of the soak (minutes {first} to {topo.SOAK_MINUTES} after submit" in row
    assert "through a 10-minute soak" not in README


def test_readme_lists_every_runs_action_and_the_completion_command() -> None:
    parser = build_parser()
    for action in _actions(parser, "runs"):
        assert re.search(rf"srez runs [^\n]*\b{action}\b", README), action
    assert "srez completion bash" in README and "srez completion zsh" in README
