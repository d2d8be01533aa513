"""What the view server's routes share: the results folder's index, the leaderboard, the live
runs (when not hosted) and the gate (:mod:`srez_client.web.security`)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from aiohttp import web

from srez_client.tui.source import RunSource
from srez_client.tui.source_results import FinishedRunSource
from srez_client.web.catalog import RunRow
from srez_client.web.matrix import Leaderboard
from srez_client.web.pages import FinishedPages
from srez_client.web.results_index import ResultsIndex
from srez_client.web.security import Gate

REFRESH_S: Final = 2.0
"""How often the results folder is listed again for new or changed runs."""


class LiveRuns(Protocol):
    """The backends' live runs, as the view server uses them (:mod:`srez_client.web.live`)."""

    async def rows(self) -> list[RunRow]:
        """Runs the backends list that have no results folder yet."""
        ...

    def source(self, run_id: str) -> RunSource | None:
        """A source for a live run, or None when no backend knows it."""
        ...

    async def act(self, run_id: str, action: str) -> str:
        """``stop``, ``remove`` or ``detach`` a live run; what happened, in one line."""
        ...


@dataclass
class ViewServer:
    """What the routes share."""

    results: Path
    gate: Gate = field(default_factory=Gate)
    hosted: bool = False
    live: LiveRuns | None = None
    index: ResultsIndex = field(init=False)
    board: Leaderboard = field(init=False)
    pages: FinishedPages = field(default_factory=FinishedPages)
    _refreshed: float = 0.0
    _refresh_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def __post_init__(self) -> None:
        self.index = ResultsIndex(self.results)
        self.board = Leaderboard(self.index)

    async def refresh(self, *, force: bool = False) -> None:
        """Lists the results folder again unless it was listed in the last :data:`REFRESH_S`."""
        async with self._refresh_lock:
            if force or time.monotonic() - self._refreshed >= REFRESH_S:
                await asyncio.to_thread(self.index.refresh)
                self._refreshed = time.monotonic()

    async def rows(self) -> list[RunRow]:
        """Every run: live ones, then the results folder's."""
        finished = self.index.rows()
        if self.live is None or self.hosted:
            return finished
        known = {r.run_id for r in finished}
        return [r for r in await self.live.rows() if r.run_id not in known] + finished

    def finished_source(self, run_id: str) -> FinishedRunSource | None:
        folder = self.index.path_of(run_id)
        return None if folder is None else FinishedRunSource(folder)


SERVER: Final = web.AppKey("server", ViewServer)
