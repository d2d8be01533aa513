"""The documentation and its walk agree: every command of the ``sh`` blocks of README.md and of
every page of ``docs/`` is walked (by the ``test_walk_*`` files beside this one) or listed in
:data:`walk_steps.NOT_WALKED` with the reason, and the walk passes every option the line shows."""

from __future__ import annotations

import re

from walk_kit import DOCS, README, ROOT, documented_commands, options, readme_commands
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


def test_every_documented_command_is_walked() -> None:
    by_page = documented_commands()
    commands = {c for page in by_page.values() for c in page}
    assert len(commands) > 40, "the documented commands were not found"
    assert by_page["README.md"], "the README shows no command"
    missing = [
        f"{page}: {c}"
        for page, lines in by_page.items()
        for c in lines
        if c not in WALKED and c not in NOT_WALKED
    ]
    assert not missing, "documented commands nobody walks (add them to walk_steps.py):\n" + (
        "\n".join(missing)
    )
    stale = sorted((WALKED | NOT_WALKED.keys()) - commands)
    assert not stale, "walked lines no document shows any more:\n" + "\n".join(stale)


def test_the_walk_covers_the_docs_pages() -> None:
    """The pages that show commands are read: a command moved from the README to a page stays
    walked, and a page's blocks are found as the README's are."""
    by_page = documented_commands()
    pages = {p for p, lines in by_page.items() if lines and p.startswith("docs/")}
    assert {"docs/evaluate.md", "docs/integrations.md", "docs/managed.md"} <= pages, pages
    assert len(by_page) == 1 + len(list(DOCS.glob("*.md")))


def test_the_walk_passes_every_option_the_readme_shows() -> None:
    for line, steps in COMMANDS + LOCAL_RUNS + LLM_AND_MANAGED + DOCKER + INSPECT + MCP:
        walked = set().union(*(options(step.command) for step in steps))
        assert options(line) <= walked, f"{line}: the walk never passes {options(line) - walked}"


def test_the_walk_catches_a_documented_command_nobody_walks() -> None:
    """The coverage check itself: a command added to a block, of the README or of a page, is
    reported."""
    for page in (README, DOCS / "watch.md"):
        text = page.read_text().replace("srez attach RUN", "srez attach RUN --theme dark", 1)
        assert "srez attach RUN --theme dark" in readme_commands(text), page
    assert "srez attach RUN --theme dark" not in WALKED


def test_make_run_is_the_walked_sweep() -> None:
    recipe = re.search(r"^run:.*\n\t(.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None
    sweep = recipe.group(1).replace("$(VENV)/bin/", "")
    assert sweep in WALKED, sweep
