"""What feeds the run viewer: a run source's events applied to the view models, no urwid.

:class:`RunFeed` owns the models of one run (dialog fold, changes, logs, evaluation) and the
coroutines that fill them: the event stream (dialog batches, phase, diff and grade frames), the
fetches those frames trigger (the reference and similarity once the phase leaves ``agent``, the
grade on a grade frame or at the end; a diff frame carries the diff itself) and the log followers. Each
change is announced by name through ``changed`` so the widget refreshes only that panel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from srez_client.errors import ClientError
from srez_client.tui.source import DialogBatch, RunMeta, RunSource, SourceUnavailable
from srez_client.tui.viewmodels.changes import ChangesModel
from srez_client.tui.viewmodels.dialog_fold import DialogFold
from srez_client.tui.viewmodels.evaluation import Evaluation, build_evaluation
from srez_client.tui.viewmodels.log_buffer import Logs
from srez_daemon.protocol import TaskPrompt
from srez_daemon.protocol.api import AGENT_OVER, DiffFrame, GradeFrame, PhaseFrame

logger = logging.getLogger(__name__)

Changed = Callable[[str], None]
"""Told which part changed: ``dialog``, ``changes``, ``evaluation``, ``logs``, ``meta``,
``status``."""
Spawn = Callable[[Coroutine[Any, Any, Any], str], None]


@dataclass(slots=True)
class RunModels:
    """Everything the viewer shows about one run."""

    fold: DialogFold = field(default_factory=DialogFold)
    changes: ChangesModel = field(default_factory=ChangesModel)
    logs: Logs = field(default_factory=Logs)
    evaluation: Evaluation = field(default_factory=Evaluation)
    meta: RunMeta | None = None
    phase: str = "starting"
    prompt: str = ""
    status: str = "Starting…"
    """A line about the connection ("" when all is well)."""
    grade: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    ended: bool = False


class RunFeed:
    """Applies a source's events to :class:`RunModels`."""

    def __init__(self, source: RunSource, changed: Changed, spawn: Spawn) -> None:
        self.source = source
        self.models = RunModels()
        self._changed = changed
        self._shell_spawn = spawn
        self._tasks: set[asyncio.Task[Any]] = set()
        self.stopped = False
        self._logs_started = False
        self.disconnected = False

    def _status(self, text: str) -> None:
        self.models.status = text
        self._changed("status")

    async def run(self) -> None:
        """Connect, follow the events to the end, then fetch the final state."""
        await self.source.connect(self._status)
        self._status("")
        await self.refresh_meta()
        self._start_logs()
        try:
            async for event in self.source.events():
                self.apply(event)
        except (ClientError, OSError) as e:
            self.disconnected = True
            self._status(f"disconnected: {e} (R reconnects)")
            return
        self.models.ended = True
        self._changed("dialog")
        await self.refresh_meta()
        await asyncio.gather(self.refresh_diff(), self.refresh_reference(), self.refresh_grade())

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        """Start a task of this feed (cancelled by :meth:`stop`)."""
        if self.stopped:
            coro.close()
            return
        self._shell_spawn(self._guard(coro), name)

    async def _guard(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await coro
        finally:
            if task is not None:
                self._tasks.discard(task)

    def start(self) -> None:
        """Follow the run in the background."""
        self.spawn(self.run(), "viewer-feed")

    def stop(self) -> None:
        """Cancel every task of this feed (the viewer was detached)."""
        self.stopped = True
        for task in list(self._tasks):
            task.cancel()

    async def close(self, limit_s: float = 2.0) -> None:
        """Cancel every task of this feed and wait (at most ``limit_s``) until they have ended.

        The source may be closed after this: a task still unwinding when its client closes
        can reopen the client's HTTP session (it does so lazily) and leave it unclosed.
        """
        self.stop()
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        if tasks:
            await asyncio.wait(tasks, timeout=limit_s)

    def reconnect(self) -> None:
        """The reconnect key: cut a connection wait short, or resume a dropped stream."""
        wake = getattr(self.source, "reconnect_now", None)
        if callable(wake):
            wake()
        if self.disconnected:
            self.disconnected = False
            self.spawn(self.run(), "viewer-feed")

    def apply(self, event: object) -> None:
        """One event into the models (synchronous: no I/O; fetches are spawned)."""
        m = self.models
        if isinstance(event, DialogBatch):
            for entry in event.entries:
                if isinstance(entry, TaskPrompt) and not m.prompt:
                    m.prompt = entry.text
                m.fold.add(entry)
            self._changed("dialog")
        elif isinstance(event, PhaseFrame):
            m.phase = event.phase
            self._changed("meta")
            if event.phase in AGENT_OVER and not m.changes.agent_over:
                self.spawn(self.refresh_reference(), "viewer-reference")
            if event.phase in ("done", "error"):
                self.spawn(self.refresh_grade(), "viewer-grade")
        elif isinstance(event, DiffFrame):
            m.changes.set_agent_diff(event.diff)
            self._changed("changes")
        elif isinstance(event, GradeFrame):
            self.spawn(self.refresh_grade(), "viewer-grade")

    async def refresh_meta(self) -> None:
        """Ask for the run's metadata again."""
        with contextlib.suppress(ClientError, SourceUnavailable, OSError):
            self.models.meta = await self.source.meta()
            if self.models.meta.phase and self.models.phase in ("starting", ""):
                self.models.phase = self.models.meta.phase
            self._changed("meta")

    async def refresh_diff(self) -> None:
        """Fetch the agent's diff as the run left it (diff frames bring it while the run is live)."""
        with contextlib.suppress(ClientError, SourceUnavailable, OSError):
            self.models.changes.set_agent_diff(await self.source.diff())
            self._changed("changes")

    async def refresh_reference(self) -> None:
        """Fetch the reference and the similarity (refused during the agent phase)."""
        try:
            text, similarity = await self.source.reference()
        except (ClientError, SourceUnavailable, OSError) as e:
            logger.debug("no reference yet: %s", e)
            return
        self.models.changes.set_reference(text, similarity)
        self._changed("changes")

    async def refresh_grade(self) -> None:
        """Fetch the grade and the summary; rebuild the evaluation."""
        m = self.models
        with contextlib.suppress(ClientError, SourceUnavailable, OSError):
            m.grade = await self.source.grade()
        with contextlib.suppress(ClientError, SourceUnavailable, OSError):
            m.summary = await self.source.summary()
        agent = m.meta.agent if m.meta else ""
        tail = "\n".join(m.logs.buffer("evaluator").all_lines()[-20:])
        m.evaluation = build_evaluation(m.grade, m.summary, agent=agent, log_tail=tail)
        self._changed("evaluation")

    def _start_logs(self) -> None:
        if self._logs_started:
            return
        self._logs_started = True
        names = self.source.log_names()
        if names and self.models.logs.current not in names:
            self.models.logs.current = names[0]
        for name in names:
            self.models.logs.buffer(name)
            self.spawn(self._follow_log(name), f"viewer-log-{name}")

    async def _follow_log(self, name: str) -> None:
        buf = self.models.logs.buffer(name)
        try:
            async for chunk in self.source.logs(name, follow=self.source.live):
                buf.append(chunk)
                if name == self.models.logs.current:
                    self._changed("logs")
        except (ClientError, SourceUnavailable, OSError) as e:
            buf.append(f"\n[log unavailable: {e}]\n")
            self._changed("logs")
