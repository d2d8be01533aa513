"""Run folders planted in a shared ``results/`` are data, never trusted: a number out of range in
a ``summary.json`` or a ``result.json`` marks that run damaged and breaks neither the list, nor
the run's page, nor Compare, nor the leaderboard, nor the matrix (docs/view.md)."""

from __future__ import annotations

import math
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from web_kit import ESCAPES, hosted_view, planted_copy, real_results

from srez_client.layout import RUN_ID_RE

HUGE_STEPS = "20270101T000000Z-0000a001"
HUGE_REWARDS = ("20270101T000000Z-0000a002", "20270101T000000Z-0000a003")
NEGATIVE = "20270101T000000Z-0000a004"
PLANTED = (HUGE_STEPS, *HUGE_REWARDS, NEGATIVE)
ESCAPED = "20270101T000000Z-0000a005"
CONTROLS = ("\x1b", "\x07", "\u202e", "\n")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("results")
    ids = real_results(root)
    (original,) = [p for p in root.rglob(ids[0]) if p.is_dir()]
    planted_copy(original, HUGE_STEPS, steps=1e20)
    for run_id in HUGE_REWARDS:
        planted_copy(original, run_id, reward=1e308)
    planted_copy(original, NEGATIVE, reward=-1e308)
    planted_copy(
        original, ESCAPED, agent=f"evil{ESCAPES}", model=f"m\x07{ESCAPES}", task_id="sre\n001"
    )
    return root, ids


@pytest.fixture
async def session(results: tuple[Path, list[str]]) -> AsyncIterator[aiohttp.ClientSession]:
    async with hosted_view(results[0]) as s:
        yield s


def _finite(value: Any) -> bool:
    """Every number anywhere in ``value`` is finite (JSON's null stands for none)."""
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


async def test_the_list_shows_planted_runs_as_damaged_with_no_number_of_theirs(
    session: aiohttp.ClientSession, results: tuple[Path, list[str]]
) -> None:
    async with session.get("/api/runs", params={"tab": "all"}) as r:
        assert r.status == 200, await r.text()
        rows = {row["run_id"]: row for row in (await r.json())["rows"]}
    assert set(rows) == {*results[1], *PLANTED, ESCAPED}
    for run_id in PLANTED:
        assert rows[run_id]["status"] == "damaged", rows[run_id]
        assert rows[run_id]["reward"] is None and rows[run_id]["steps"] is None
    for run_id in results[1]:
        assert rows[run_id]["status"] != "damaged" and rows[run_id]["reward"] is not None


async def test_the_leaderboard_and_the_matrix_leave_damaged_runs_out_and_stay_finite(
    session: aiohttp.ClientSession, results: tuple[Path, list[str]]
) -> None:
    async with session.get("/api/leaderboard") as r:
        assert r.status == 200, await r.text()
        board = await r.json()
    assert board["runs"] == len(results[1]) + 1 and board["unreadable"] == len(PLANTED)
    assert _finite(board) and board["report"] is not None
    async with session.get("/api/matrix") as r:
        assert r.status == 200, await r.text()
        matrix = await r.json()
    assert _finite(matrix)
    cells = [c for row in matrix["cells"] for c in row if c is not None]
    assert all(c["reward"] is None or 0.0 <= c["reward"] <= 1.0 for c in cells)


@pytest.mark.parametrize("planted", PLANTED)
async def test_a_damaged_run_s_page_and_compare_answer_and_say_so(
    session: aiohttp.ClientSession, results: tuple[Path, list[str]], planted: str
) -> None:
    async with session.get(f"/api/runs/{planted}") as r:
        assert r.status == 200, await r.text()
        page = await r.json()
    assert _finite(page)
    assert page["meta"]["damaged"], page["meta"]
    async with session.get("/api/compare", params={"a": results[1][0], "b": planted}) as r:
        assert r.status == 200, await r.text()
        assert _finite(await r.json())


def test_run_ids_are_ascii_and_whole() -> None:
    """A trailing newline or another script's digits is no run id (``$`` and ``\\d`` took them)."""
    assert RUN_ID_RE.match("20270101T000000Z-0000a001")
    for bad in (
        "20270101T000000Z-0000a001\n",
        "٢٠٢٧0101T000000Z-0000a001",
        " 20270101T000000Z-0000a001",
    ):
        assert not RUN_ID_RE.match(bad), repr(bad)


async def test_controls_and_bidi_overrides_in_names_reach_no_list_filter_matrix_or_board(
    session: aiohttp.ClientSession,
) -> None:
    """ESC, BEL, U+202E and a newline in a planted run's names arrive as visible escapes."""
    answers = []
    for path in ("/api/runs?tab=all", "/api/matrix", "/api/leaderboard"):
        async with session.get(path) as r:
            assert r.status == 200
            answers.append(await r.json())
    strings = _strings(answers)
    for control in CONTROLS:
        assert not any(control in text for text in strings), repr(control)
    for answer in answers:  # each page names the run, escaped: the name is kept, made visible
        assert "evil\\x1b[2J\\x1b]0;pwned\\x07\\u202eevil" in "".join(_strings(answer))


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_a_log_that_is_a_link_is_no_log(tmp_path: Path) -> None:
    """``log_names`` tells nobody whether a link's target exists: a linked log or logs folder
    is listed as no log at all."""
    from srez_client.tui.source_results import FinishedRunSource

    secret = tmp_path / "secret.log"
    secret.write_text("TOP SECRET")
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "logs" / "agent.log").symlink_to(secret)
    (run / "logs" / "daemon.log").write_text("real")
    assert FinishedRunSource(run).log_names() == ["daemon"]
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "logs").symlink_to(run / "logs")
    assert FinishedRunSource(linked).log_names() == []


async def test_a_run_folder_swapped_for_a_link_after_the_listing_is_read_through_no_link(
    tmp_path: Path,
) -> None:
    """Listed, then its agent's folder swapped for a link to a folder holding a secret run of
    the same id: the view answers 404 for it at once, not the secret run (no wait for the
    next listing)."""
    root = tmp_path / "results"
    (run_id,) = real_results(root, tasks=("sre-001",), agents=("scripted",))
    (folder,) = [p for p in root.rglob(run_id) if p.is_dir()]
    async with hosted_view(root) as s:
        async with s.get(f"/api/runs/{run_id}") as r:
            assert r.status == 200
        secret = tmp_path / "elsewhere"
        shutil.copytree(folder.parent, secret)
        (secret / run_id / "archive" / "dialog.jsonl").write_text("TOP SECRET\n")
        shutil.rmtree(folder.parent)
        folder.parent.symlink_to(secret)
        for path in ("", "/download/dialog.jsonl", "/dialog?before=1", "/logs/agent"):
            async with s.get(f"/api/runs/{run_id}{path}") as r:
                assert r.status == 404, (path, r.status)
                assert "TOP SECRET" not in await r.text()
