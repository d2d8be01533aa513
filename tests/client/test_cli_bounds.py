"""Every argument has bounds: a value that would size a list, a timer or a record beyond what
works is refused at once, with one ``srez: error:`` line and exit status 2, before anything
runs; a replay or task file nested past parsing is one such line too; and a path echoed in an
error shows its escape sequences as text (docs/cli.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from client_helpers import srez_command

HUGE = "99999999999999999999999"
CASES = {
    "eval --seeds huge": ["eval", "--agent", "noop", "--tasks", "sre-001", "--seeds", HUGE],
    "eval --parallel huge": ["eval", "--agent", "noop", "--tasks", "sre-001", "--parallel", HUGE],
    "eval --limit 0": ["eval", "--agent", "noop", "--tasks", "sre-001", "--limit", "0"],
    "play --seed huge": ["play", "sre-001", "--seed", HUGE],
    "play --seed negative": ["play", "sre-001", "--seed", "-1"],
    "run --seed past 2^53": ["run", "--task", "sre-001", "--seed", str(2**53)],
    "run --seed in another script": ["run", "--task", "sre-001", "--seed", "٣"],
    "run --timeout nan": ["run", "--task", "sre-001", "--timeout", "nan"],
    "run --timeout inf": ["run", "--task", "sre-001", "--timeout", "inf"],
    "mirror --timeout inf": ["mirror", "x", "--watch", "--timeout", "inf"],
    "eval --task-seed huge": ["eval", "--agent", "noop", "--task-seed", HUGE],
}


@pytest.mark.parametrize("argv", list(CASES.values()), ids=list(CASES))
def test_an_unbounded_value_is_one_error_line(tmp_path: Path, argv: list[str]) -> None:
    done = srez_command(tmp_path / "state", *argv, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("srez: error: argument --"), done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_replay_file_nested_past_parsing_is_one_error_line(tmp_path: Path) -> None:
    for name, line in (("deep", "[" * 20_000 + "]" * 20_000), ("long", " " * 70_000 + "{}")):
        replay = tmp_path / f"{name}.jsonl"
        replay.write_text(line + "\n")
        done = srez_command(
            tmp_path / "state", "eval", "--agent", f"replay:{replay}", "--tasks", "sre-001",
            "--results", str(tmp_path / "results"), timeout=60,
        )  # fmt: skip
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert lines[0].startswith(f"srez: error: {replay}:1: "), lines[0]


def test_a_path_echoed_in_an_error_shows_its_escapes_as_text(tmp_path: Path) -> None:
    folder = tmp_path / "\x1b]0;pwned\x07\x1b[31mred\u202e"
    folder.mkdir()
    done = srez_command(
        tmp_path / "state", "eval", "--agent", "noop", "--tasks", "sre-001",
        "--tasks-dir", str(folder), timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "no task files (*.yaml) in" in done.stderr
    for control in ("\x1b", "\x07", "\u202e"):
        assert control not in done.stderr
    assert "\\x1b]0;pwned\\x07\\x1b[31mred\\u202e" in done.stderr
