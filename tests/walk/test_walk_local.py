"""The README walk: runs on the ``local`` backend, a daemon through ``curl``, bring-your-own
agents, and the terminal UI in a real terminal."""

from __future__ import annotations

import json

import pytest
from walk_kit import Step, Walker
from walk_steps import LOCAL_RUNS


def test_walk_the_local_backend_and_the_daemon(walker: Walker, bwrap: None) -> None:
    for line, steps in LOCAL_RUNS:
        walker.walk(line, steps)
    byo = sorted((walker.clone / "results" / "sre-007" / "none" / "my-agent").iterdir())
    assert len(byo) == 2
    for folder in byo:
        run = json.loads((folder / "run.json").read_text())
        assert run["agent"] == "my-agent" and run["isolation"] == "bubblewrap"
        assert run["agent_cmd"][1] == str(walker.clone / "examples" / "byo_agent.py")


@pytest.mark.tmux
def test_walk_the_terminal_ui(walker: Walker) -> None:
    walker.walk(
        "(a finished run to look at)",
        [Step("srez eval --agent heuristic --tasks sre-007", r"^ +1 +heuristic +\S+ +1 +0\.900 ")],
    )
    run = next((walker.clone / "results" / "sre-007" / "none" / "heuristic").iterdir()).name
    walker.context["run"] = run

    dashboard = walker.terminal("srez tui")
    try:
        dashboard.wait_for("No managed run yet")
        dashboard.keys("C-q")  # flow control is on, as in a user's terminal
        assert dashboard.exit_status() == 0
    finally:
        dashboard.close()

    viewer = walker.terminal("srez attach {run}")
    try:
        # the run's header and its finished dialog, drawn (the frame can show the dialog's end
        # a moment before the header has read the run)
        viewer.wait_for(r"sre-007")
        screen = viewer.wait_for(r"Session complete .*· [1-9][0-9]* items")
        assert "sre-007" in screen, screen
        viewer.keys("C-q")
        assert viewer.exit_status() == 0
    finally:
        viewer.close()
