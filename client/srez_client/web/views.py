"""One open run: its source's events folded into the views the page shows.

A :class:`RunView` reads a :class:`~srez_client.tui.source.RunSource` (a results folder, or a
live run's daemon) the way the TUI's viewer does: dialog batches into the fold, diff frames into
the Changes model, the reference once the agent phase is over, the grade once graded. The page
gets :meth:`RunView.snapshot` whole when it opens a run, then the parts that changed as they
change (:meth:`RunView.follow`), so a live run and a finished one are one code path.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, Final

from srez_client.results.trust import problem
from srez_client.tui.source import DialogBatch, RunMeta, RunSource, SourceUnavailable
from srez_client.tui.source_results import DIFF_VIEW_MAX
from srez_client.tui.viewmodels.changes import ChangesModel
from srez_client.tui.viewmodels.dialog_fold import DialogFold
from srez_client.tui.viewmodels.evaluation import build_evaluation
from srez_client.web.present import (
    changes_json,
    dialog_json,
    evaluation_json,
    item_json,
    meta_json,
)
from srez_daemon.protocol import dialog
from srez_daemon.protocol.api import DiffFrame, GradeFrame, PhaseFrame

AGENT_OVER: Final = frozenset({"sealed", "grading", "done", "error", "finished"})
"""Phases after the agent's: the reference patch may be shown (``finished``: a results folder)."""
ENDED: Final = frozenset({"done", "error", "finished"})
LOG_TAIL: Final = 4000
"""Characters of the evaluator's log shown behind an error."""


class RunView:
    """The views of one run, built from its source."""

    def __init__(self, source: RunSource) -> None:
        self.source = source
        self.fold = DialogFold()
        self.changes = ChangesModel()
        self.meta = RunMeta(run_id=source.run_id)
        self.phase = ""
        self.prompt = ""
        self.grade: dict[str, Any] | None = None
        self.summary: dict[str, Any] | None = None
        self.isolation = ""
        self.missing = ""
        """Why the dialog could not be read, when it could not."""
        self.damaged = ""
        self.diff_cut = 0
        """Bytes of the agent's patch past what the view parses."""
        """Why the run's grade files are not shown, when a number in them is out of range."""

    @property
    def live(self) -> bool:
        """Whether the run may still change."""
        return self.source.live and self.phase not in ENDED

    async def open(self) -> None:
        """Reads what the run has now (a finished run: everything)."""
        self.meta = await self.source.meta()
        self.phase = self.meta.phase
        self.isolation = self.meta.settings.get("isolation", "")
        with contextlib.suppress(SourceUnavailable):
            diff, self.diff_cut = await self.source.diff_head(DIFF_VIEW_MAX)
            self.changes.set_agent_diff(diff)
        await self._after_agent()

    async def _after_agent(self) -> None:
        if self.phase not in AGENT_OVER and self.source.live:
            return
        if not self.changes.agent_over:
            with contextlib.suppress(SourceUnavailable):
                self.changes.set_reference(*await self.source.reference())
        if self.grade is None:
            with contextlib.suppress(SourceUnavailable):
                self.grade = self._trusted(await self.source.grade())
        if self.summary is None:
            with contextlib.suppress(SourceUnavailable):
                self.summary = self._trusted(await self.source.summary())

    def _trusted(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """``data`` when its numbers are ones a run writes (:mod:`srez_client.results.trust`);
        else None, and the run is marked damaged, saying why."""
        found = problem(data)
        if found is None:
            return data
        self.damaged = self.damaged or found
        return None

    async def _log_tail(self) -> str:
        if not (self.summary or {}).get("error"):
            return ""
        for name in ("evaluator", "agent"):
            if name in self.source.log_names():
                text = "".join([c async for c in self.source.logs(name, follow=False)])
                return text[-LOG_TAIL:]
        return ""

    async def evaluation(self) -> dict[str, Any]:
        """The Evaluation area now."""
        ev = build_evaluation(
            self.grade, self.summary, agent=self.meta.agent, log_tail=await self._log_tail()
        )
        return evaluation_json(ev)

    def _meta(self) -> dict[str, Any]:
        meta = meta_json(self.meta, prompt=self.prompt, isolation=self.isolation)
        meta["phase"] = self.phase or meta["phase"]
        meta["live"] = self.live
        meta["source"] = "daemon" if self.source.live else "results"
        meta["damaged"] = self.damaged
        return meta

    async def snapshot(self, last: int | None = None) -> dict[str, Any]:
        """Everything the page shows of the run now (with ``last``, the newest ``last`` dialog
        items only)."""
        return {
            "meta": self._meta(),
            "dialog": {
                **dialog_json(self.fold, live=self.live, last=last),
                "missing": self.missing,
            },
            "changes": {**changes_json(self.changes), "patch_cut": self.diff_cut},
            "evaluation": await self.evaluation(),
            "logs": self.source.log_names(),
        }

    def _add(self, entries: list[dialog.DialogEntry]) -> list[int]:
        touched = []
        for entry in entries:
            if isinstance(entry, dialog.TaskPrompt) and not self.prompt:
                self.prompt = entry.text
            index = self.fold.add(entry)
            if index is not None:
                touched.append(index)
        return sorted(set(touched))

    async def follow(self) -> AsyncIterator[dict[str, Any]]:
        """The parts that change, as they change, until the run's events end: ``items`` (the
        dialog items added or updated, by index), ``changes``, ``phase`` with the top bar,
        ``evaluation``."""
        try:
            async for frame in self._frames():
                yield frame
        except SourceUnavailable as e:  # no dialog file (a link planted there is not one)
            self.missing = "its dialog.jsonl is missing, or is not a plain file"
            _ = e
        state, text = self.fold.footer(live=False)
        yield {"type": "end", "footer": {"state": state, "text": text}, "meta": self._meta()}

    async def fold_all(self) -> None:
        """Folds a finished run's whole dialog without building the frames :meth:`follow`
        sends (each would render its items' Markdown, which a page of the newest items does
        not need)."""
        try:
            async for event in self.source.events():
                if isinstance(event, DialogBatch):
                    self._add(event.entries)
                elif isinstance(event, PhaseFrame):
                    self.phase = event.phase
                    await self._after_agent()
        except SourceUnavailable:
            self.missing = "its dialog.jsonl is missing, or is not a plain file"
        skipped = getattr(self.source, "skipped", 0)
        if skipped:
            self.missing = (
                f"the first {skipped:,} bytes of this dialog are not shown (it is longer than "
                "the view reads): download dialog.jsonl for all of it"
            )

    async def _frames(self) -> AsyncIterator[dict[str, Any]]:
        async for event in self.source.events():
            if isinstance(event, DialogBatch):
                touched = self._add(event.entries)
                state, text = self.fold.footer(live=self.live)
                yield {
                    "type": "items",
                    "items": [[i, item_json(self.fold.items[i])] for i in touched],
                    "footer": {"state": state, "text": text},
                    "prompt_seen": bool(self.prompt),
                }
            elif isinstance(event, DiffFrame):
                self.changes.set_agent_diff(event.diff)
                yield {"type": "changes", "changes": changes_json(self.changes)}
            elif isinstance(event, PhaseFrame):
                self.phase = event.phase
                await self._after_agent()
                yield {"type": "phase", "meta": self._meta()}
                yield {"type": "changes", "changes": changes_json(self.changes)}
                yield {"type": "evaluation", "evaluation": await self.evaluation()}
            elif isinstance(event, GradeFrame):
                with contextlib.suppress(SourceUnavailable):
                    self.grade = self._trusted(await self.source.grade())
                yield {"type": "evaluation", "evaluation": await self.evaluation()}
