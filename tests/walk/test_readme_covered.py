"""The README and its walk agree: every command of README.md's ``sh`` blocks is walked (by the
``test_walk_*`` files beside this one) or listed in :data:`walk_steps.NOT_WALKED` with the reason,
and the walk passes every option the README line shows."""

from __future__ import annotations

import re

from walk_kit import README, ROOT, options, readme_commands
from walk_steps import (
    COMMANDS,
    DOCKER,
    INSPECT,
    LLM_AND_MANAGED,
    LOCAL_RUNS,
    MCP,
    NOT_WALKED,
    WALKED,
)


def test_every_readme_command_is_walked() -> None:
    commands = readme_commands(README.read_text())
    assert len(commands) > 40, "the README's commands were not found"
    missing = [c for c in commands if c not in WALKED and c not in NOT_WALKED]
    assert not missing, "README commands nobody walks (add them to tests/walk/walk_steps.py):\n" + (
        "\n".join(missing)
    )
    stale = sorted((WALKED | NOT_WALKED.keys()) - set(commands))
    assert not stale, "walked lines the README no longer shows:\n" + "\n".join(stale)


def test_the_walk_passes_every_option_the_readme_shows() -> None:
    for line, steps in COMMANDS + LOCAL_RUNS + LLM_AND_MANAGED + DOCKER + INSPECT + MCP:
        walked = set().union(*(options(step.command) for step in steps))
        assert options(line) <= walked, f"{line}: the walk never passes {options(line) - walked}"


def test_the_walk_catches_a_readme_command_nobody_walks() -> None:
    """The coverage check itself: a command added to a README block is reported."""
    text = README.read_text().replace("srez tui ", "srez tui --theme dark ", 1)
    assert "srez tui --theme dark" in readme_commands(text)
    assert "srez tui --theme dark" not in WALKED


def test_make_run_is_the_walked_sweep() -> None:
    recipe = re.search(r"^run:.*\n\t(.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None
    sweep = recipe.group(1).replace("$(VENV)/bin/", "")
    assert sweep in WALKED, sweep
