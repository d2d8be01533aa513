"""One run that holds a lot (long Markdown notes, a log of escape bytes, a patch of thousands of
files, tens of thousands of dialog entries) is opened by ``srez view`` without holding up anyone
else, and every answer about it is bounded (docs/view.md, "Limits"); its downloads stay whole.
The bench's run is far larger (``make bench``, ``view.heavy_run``)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from bench.view_heavy import Heavy, heavy_run
from web_kit import hosted_view

from srez_client.tui.source_results import DIFF_VIEW_MAX
from srez_client.web import pages
from srez_client.web.app import LOG_PAGE
from srez_client.web.present import BODY_MAX, CARDS_MAX, DIALOG_PAGE, MARKDOWN_MAX

SIZE = Heavy(
    notes=2, note_bytes=600_000, log_bytes=4 << 20, patch_files=30_000, dialog_entries=60_000
)


@pytest.fixture(scope="module")
def heavy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("results")
    return root, heavy_run(root, SIZE)


@pytest.fixture
async def session(heavy: tuple[Path, str]) -> AsyncIterator[aiohttp.ClientSession]:
    async with hosted_view(heavy[0]) as s:
        yield s


async def test_the_page_is_built_off_the_event_loop_once_per_version_of_the_run(
    session: aiohttp.ClientSession, heavy: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folding and rendering run in a worker thread, never on the loop that answers everyone
    else; opening the run again, or paging its dialog, builds nothing; a run whose files
    changed is built again. (The bench measures what the others see meanwhile.)"""
    built: list[threading.Thread] = []
    build = pages._build

    def spy(folder: Path) -> pages.Page:
        built.append(threading.current_thread())
        return build(folder)

    monkeypatch.setattr(pages, "_build", spy)
    loop_thread = threading.current_thread()  # the test's loop also runs the test server
    run = f"/api/runs/{heavy[1]}"
    for path in (run, run, f"{run}/dialog?before=500"):
        async with session.get(path) as r:
            assert r.status == 200
    assert len(built) == 1 and built[0] is not loop_thread
    (folder,) = [p for p in heavy[0].rglob(heavy[1]) if p.is_dir()]
    summary = folder / "summary.json"
    summary.write_bytes(summary.read_bytes())  # a new version of the run (its mtime moved)
    os.utime(summary, ns=(time.time_ns(), time.time_ns() + 10**9))
    async with session.get(run) as r:
        assert r.status == 200
    assert len(built) == 2


async def test_every_answer_about_the_heavy_run_is_bounded_and_says_what_it_left_out(
    session: aiohttp.ClientSession, heavy: tuple[Path, str]
) -> None:
    run = f"/api/runs/{heavy[1]}"
    async with session.get(run) as r:
        page_bytes = len(await r.read())
    async with session.get(run) as r:
        page = await r.json()
    assert page_bytes < 4 << 20, page_bytes
    dialog = page["dialog"]
    assert len(dialog["items"]) == DIALOG_PAGE and dialog["start"] > 0
    assert dialog["tool_calls"] > DIALOG_PAGE  # counted over the whole dialog
    notes = [i for i in dialog["items"] if i["kind"] == "assistant" and len(i["body"]) > 1000]
    for note in notes:  # long notes: cut, sent as text, not rendered
        assert len(note["body"]) <= BODY_MAX and "html" not in note
        assert note["cut"] == SIZE.note_bytes - BODY_MAX
    assert SIZE.note_bytes > MARKDOWN_MAX
    changes = page["changes"]
    assert len(changes["agent"]["cards"]) <= CARDS_MAX and changes["agent"]["cards_cut"] > 0
    assert changes["patch_cut"] > 0  # only the patch's first megabyte is parsed
    assert changes["agent"]["totals"]["files"] < SIZE.patch_files
    # the dialog's earlier pages, back to its start
    before, pages = dialog["start"], 0
    while before > 0 and pages < 3:
        async with session.get(f"{run}/dialog", params={"before": str(before)}) as r:
            earlier = await r.json()
        assert len(earlier["items"]) <= DIALOG_PAGE and earlier["start"] < before
        before, pages = earlier["start"], pages + 1
    for bad in ("-1", "x", "1e3", "١"):
        async with session.get(f"{run}/dialog", params={"before": bad}) as r:
            assert r.status == 400 and "whole number" in (await r.json())["error"]
    # the log: its newest megabyte, sanitised, then the one before
    async with session.get(f"{run}/logs/agent") as r:
        log = await r.text()
        start, size = int(r.headers["X-Srez-Log-Start"]), int(r.headers["X-Srez-Log-Size"])
    assert size > SIZE.log_bytes - 16 and start == size - LOG_PAGE
    assert "\x1b" not in log and "\\x1b" in log
    async with session.get(f"{run}/logs/agent", params={"end": str(start)}) as r:
        assert int(r.headers["X-Srez-Log-Start"]) == start - LOG_PAGE


async def test_the_downloads_stay_whole(
    session: aiohttp.ClientSession, heavy: tuple[Path, str]
) -> None:
    (folder,) = [p for p in heavy[0].rglob(heavy[1]) if p.is_dir()]
    for name, path in (("patch.diff", "final.patch"), ("dialog.jsonl", "archive/dialog.jsonl")):
        async with session.get(f"/api/runs/{heavy[1]}/download/{name}") as r:
            assert r.status == 200
            assert await r.read() == (folder / path).read_bytes()
    assert (folder / "final.patch").stat().st_size > DIFF_VIEW_MAX
