"""The managed-run dashboard (urwid): the run list, and every action on runs and targets.

Each action runs its blocking call (:class:`~.source.ManagedSource`) in a worker thread through
``shell.spawn``; its outcome, or its error in one line, goes to the footer and the status bar.
Destructive actions (remove a target, delete a target's artefacts, delete a run) ask first.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, ClassVar, Final

import urwid

from srez_client.errors import ClientError
from srez_client.managed.models import Target
from srez_client.models_catalog import Catalog, load_catalog
from srez_client.sanitize import sanitize_line
from srez_client.tui.dashboard.dashboard_model import HELP, Action, DashboardModel
from srez_client.tui.dashboard.forms import AddTargetForm, CreateForm
from srez_client.tui.dashboard.monitor_view import MonitorScreen
from srez_client.tui.dashboard.source import (
    CreateRequest,
    EndedLaunch,
    ManagedSource,
    RunStatus,
)
from srez_client.tui.dashboard.widgets import (
    ConfirmDialog,
    PolledScreen,
    ShownPoller,
    message_markup,
)
from srez_client.tui.keys import Context
from srez_client.tui.shell import Shell

POLL_S: Final = 1.0
"""Seconds between two refreshes of the run list."""
ERRORS: Final = (ClientError, ValueError, LookupError, OSError)
"""What a managed-run operation raises for a reason the user can act on."""
STYLES: Final[dict[str, str]] = {
    "run": "title",
    "running": "running",
    "done": "success",
    "paused": "yellow",
    "pending": "dim",
}
"""Item style → display attribute (the application's palette)."""
CONFIRM: Final[dict[str, str]] = {
    "remove_target": "Remove target {target} from {run}? (its artefacts stay)",
    "delete_artifacts": "Delete the checkpoint, logs and results of {target} in {run}?",
    "delete_run": "Delete managed run {run} and everything under its folder?",
}


class DashboardScreen(PolledScreen[DashboardModel]):
    """The list of managed runs with per-target state, counts and scores."""

    context: ClassVar[Context] = "dashboard"

    def __init__(self, shell: Shell, source: ManagedSource | None = None) -> None:
        """Show the managed runs of ``shell.results_root`` (through the real API by default)."""
        if source is None:
            from srez_client.tui.dashboard.managed_source import ManagedApiSource

            source = ManagedApiSource(shell.results_root, shell.state_dir)
        self.shell = shell
        self.source = source
        self.model = DashboardModel()
        self.poller = ShownPoller(shell, "dashboard refresh", self.refresh, POLL_S)
        self._walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self._message = urwid.Text("")
        header = urwid.Text(("title", f"Managed runs · {sanitize_line(str(source.results_root))}"))
        footer = urwid.Pile([self._message, urwid.Text(("dim", HELP))])
        frame = urwid.Frame(urwid.ListBox(self._walker), header=header, footer=footer)
        super().__init__(frame)
        self._show()

    async def refresh(self) -> None:
        """Reads every run in a worker thread and shows them."""
        try:
            runs, ended = await asyncio.to_thread(self._read)
        except ERRORS as e:
            self._say(f"cannot list managed runs: {e}", error=True)
        else:
            self.model.set_runs(runs)
            for launch in ended:
                self._say(launch.line(), error=launch.failed)
        self._show()

    def _read(self) -> tuple[list[RunStatus], list[EndedLaunch]]:
        """The runs, and the runners that ended since the last poll (blocking)."""
        return self.source.list_runs(), self.source.ended_launches()

    def _show(self) -> None:
        items = self.model.items()
        if not items:
            self._walker[:] = [urwid.Text("No managed run yet. Press n to create one.")]
        else:
            self._walker[:] = [
                urwid.AttrMap(
                    urwid.Text(i.text, wrap="clip"),
                    "focus" if n == self.model.cursor else STYLES.get(i.style),
                )
                for n, i in enumerate(items)
            ]
            self._walker.set_focus(min(self.model.cursor, len(items) - 1))
        self._message.set_text(message_markup(self.model.message, self.model.error))
        self._invalidate()

    # -- actions ---------------------------------------------------------------------------
    def act(self, action: Action) -> None:
        """Carries out one action of the model."""
        run, target = action.run or "", action.target or ""
        if action.name in CONFIRM:
            question = CONFIRM[action.name].format(
                run=sanitize_line(run), target=sanitize_line(target)
            )
            dialog = ConfirmDialog(self.shell, question, lambda: self.act_confirmed(action))
            self.shell.push(dialog, "Confirm")
        elif action.name == "back":
            self.shell.pop()
        elif action.name == "refresh":
            self.shell.spawn(self.refresh(), "dashboard refresh")
        elif action.name == "create":
            self.shell.spawn(self._with_catalog(self._open_create), "open create form")
        elif action.name == "add_target":
            self.shell.spawn(self._with_catalog(functools.partial(self._open_add, run)), "add")
        elif action.name == "monitor":
            self.open_monitor(run, target)
        elif action.name == "run_target":
            self._run(f"runner started for {target}", self.source.start, run, target)
            self.open_monitor(run, target)
        else:
            simple: dict[str, tuple[str, Callable[..., Any]]] = {
                "pause": ("pause set: the runner stops after its current task", self.source.pause),
                "stop": ("stop sent: the runner and its in-flight run end now", self.source.stop),
                "clear_pause": ("pause flag cleared", self.source.clear_pause),
                "summarize": ("summaries rebuilt", self.source.summarize),
                "export_queue": ("queue exported", self.source.export_queue),
            }
            done, fn = simple[action.name]
            self._run(done, fn, run)

    def act_confirmed(self, action: Action) -> None:
        """The second half of a destructive action, after the user said yes."""
        run, target = action.run or "", action.target or ""
        if action.name == "remove_target":
            self._run(f"removed {target}", self.source.remove_target, run, target)
        elif action.name == "delete_artifacts":
            self._run(
                f"deleted the artefacts of {target}",
                self.source.delete_target_artifacts,
                run,
                target,
            )
        else:
            self._run(f"deleted {run}", self.source.delete, run)

    def open_monitor(self, run: str, target: str) -> None:
        """Pushes the live monitor of one target."""
        status = self.model.run(run)
        folder = status.folder if status is not None else self.source.results_root / "managed" / run
        screen = MonitorScreen(self.shell, self.source, run, target, folder)
        self.shell.push(screen, f"{run} / {target}")

    def _run(self, done: str, fn: Callable[..., Any], *args: str) -> None:
        self.shell.spawn(self._call(done, functools.partial(fn, *args)), done)

    async def _call(self, done: str, fn: functools.partial[Any]) -> str | None:
        """Runs ``fn`` in a thread, reports and refreshes; the error's text, or None."""
        problem: str | None = None
        try:
            result = await asyncio.to_thread(fn)
        except ERRORS as e:
            problem = str(e) or type(e).__name__
            self._say(problem, error=True)
        else:
            files = [str(p) for p in result] if isinstance(result, list | tuple) else []
            self._say(done + (f": {', '.join(files)}" if files else ""))
        await self.refresh()
        self.shell.redraw()
        return problem

    def _say(self, text: str, error: bool = False) -> None:
        self.model.message, self.model.error = sanitize_line(text), error
        self.shell.notify(self.model.message)

    async def _with_catalog(self, then: Callable[[Catalog], None]) -> None:
        then(await asyncio.to_thread(load_catalog))
        self.shell.redraw()

    def _open_create(self, catalog: Catalog) -> None:
        form = CreateForm(self.shell, catalog, lambda r: self._create(form, r))
        self.shell.push(form, "New managed run")

    def _create(self, form: CreateForm, request: CreateRequest) -> None:
        self.shell.spawn(self._create_async(form, request), f"create {request.name}")

    async def _create_async(self, form: CreateForm, request: CreateRequest) -> None:
        create = functools.partial(self.source.create, request)
        problem = await self._call(f"created {request.name}", create)
        if problem is None:
            self.shell.close(form)  # the creation took a while: the user may be elsewhere
        else:
            form.say(problem)
        self.shell.redraw()

    def _open_add(self, run: str, catalog: Catalog) -> None:
        status = self.model.run(run)
        existing = status.run.targets if status is not None else []
        form = AddTargetForm(self.shell, catalog, run, existing, functools.partial(self._add, run))
        self.shell.push(form, "Add targets")

    def _add(self, run: str, targets: tuple[Target, ...]) -> None:
        self.shell.pop()
        self.shell.spawn(self._add_async(run, targets), f"add targets to {run}")

    async def _add_async(self, run: str, targets: tuple[Target, ...]) -> None:
        for target in targets:  # one after the other: each rewrites run.json
            add = functools.partial(self.source.add_target, run, target)
            if await self._call(f"added {target.name}", add) is not None:
                return


__all__ = ["CONFIRM", "POLL_S", "DashboardScreen"]
