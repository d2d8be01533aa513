"""A finished run's page: built off the event loop, one at a time, and kept per file version.

Folding a dialog, parsing a diff and rendering Markdown take time in proportion to what a run
holds, and a run folder may hold a lot (notes of a megabyte, a patch of a hundred thousand
files). So a finished run's views are built in a worker thread, never on the event loop that
answers everyone else; one build at a time, so that two heavy runs opened at once do not hold
twice the memory; and the result is kept, keyed by the run's files' sizes and modification
times, so opening the run again, or paging its dialog, builds nothing. What is kept is bounded
by :data:`CACHE_BYTES` (the least recently used run goes first).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Final, NamedTuple

from srez_client.tui.source_results import FinishedRunSource
from srez_client.web.present import DIALOG_PAGE, dialog_page
from srez_client.web.views import RunView

CACHE_BYTES: Final = 96 << 20
"""What the kept runs' dialogs may hold in all (their text, as a rough measure of memory)."""
SIGNED: Final = ("summary.json", "result.json", "final.patch", "reference.patch", "run.json")
"""The files whose versions key a kept page (and ``archive/dialog.jsonl``)."""


class Page(NamedTuple):
    """A built run: its view (for the dialog's pages) and its first answer."""

    view: RunView
    first: dict[str, Any]
    size: int


def _version(folder: Path) -> tuple[tuple[int, int], ...]:
    def one(path: Path) -> tuple[int, int]:
        try:
            st = path.lstat()
        except OSError:
            return (-1, -1)
        return (st.st_size, st.st_mtime_ns)

    return tuple(one(folder / n) for n in (*SIGNED, "archive/dialog.jsonl"))


def _build(folder: Path) -> Page:
    """The run's views, folded whole (in the calling worker thread, on a loop of its own)."""

    async def fold() -> Page:
        view = RunView(FinishedRunSource(folder))
        await view.open()
        await view.fold_all()
        first = await view.snapshot(last=DIALOG_PAGE)
        size = sum(len(i.body) + len(i.title) for i in view.fold.items)
        return Page(view, first, size)

    return asyncio.run(fold())


class FinishedPages:
    """The pages of finished runs, built in a worker and kept (see the module docstring)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[Path, tuple[tuple[tuple[int, int], ...], Page]] = OrderedDict()
        self._building = threading.Lock()  # one build at a time, whichever thread asks

    def _page(self, folder: Path) -> Page:
        version = _version(folder)
        with self._building:
            kept = self._kept.get(folder)
            if kept is not None and kept[0] == version:
                self._kept.move_to_end(folder)
                return kept[1]
            page = _build(folder)
            self._kept[folder] = (version, page)
            while sum(p.size for _, p in self._kept.values()) > CACHE_BYTES and len(self._kept) > 1:
                self._kept.popitem(last=False)
            if page.size > CACHE_BYTES:  # too big to keep: answered, then let go
                self._kept.pop(folder, None)
            return page

    async def first(self, folder: Path) -> dict[str, Any]:
        """What ``GET /api/runs/{id}`` answers: the run's views, the newest dialog items."""
        return (await asyncio.to_thread(self._page, folder)).first

    async def dialog(self, folder: Path, before: int) -> dict[str, Any]:
        """The dialog items before index ``before``."""

        def page() -> dict[str, Any]:
            return dialog_page(self._page(folder).view.fold, before)

        return await asyncio.to_thread(page)


def log_range(folder: Path, name: str, end: int | None, most: int) -> tuple[str, int, int] | None:
    """The text of ``folder/logs/name`` from ``end - most`` to ``end`` (default: its end),
    sanitised, with the offset it starts at and the file's size; None when it is not a regular
    file. Run in a worker: sanitising a megabyte takes a while."""
    from srez_client.sanitize import sanitize
    from srez_client.transfer.fs import read_range

    found = read_range(folder / "logs", f"{name}.log", end, most)
    if found is None:
        return None
    data, start, size = found
    return sanitize(data.decode("utf-8", "replace")), start, size
