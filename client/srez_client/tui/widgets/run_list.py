"""The attach list: every run one can open, from live backends and the results folder.

Tabs Running / Finished / Exited / All / Recent, a filter typed straight into the list (task, model, agent,
image or run id), ``enter`` attaches. It is also the screen ``srez tui`` shows when the
dashboard package is not installed. While shown it reads the runs again every
:data:`REFRESH_S` seconds (and at once when it comes back on top), so a run stopped from the
viewer, or one that ended by itself, leaves the Running count without an F5.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any, ClassVar, Final

import urwid

from srez_client.backends.base import Backend
from srez_client.errors import ClientError
from srez_client.results.finder import find_results
from srez_client.tui.keys import Context, action_for
from srez_client.tui.recent import load_recent
from srez_client.tui.shell import Shell
from srez_client.tui.viewmodels.attach_list import (
    TAB_TITLES,
    TABS,
    AttachList,
    AttachRow,
    handle_state,
    merge_rows,
)
from srez_client.tui.widgets.poller import ShownPoller
from srez_client.tui.widgets.sizing import Size

REFRESH_S: Final = 2.0
"""How often the shown list reads the runs again."""


async def load_rows(backends: Sequence[Backend], shell: Shell) -> list[AttachRow]:
    """Rows from every backend (errors skipped) and from the results folder."""
    live: list[AttachRow] = []
    for backend in backends:
        with contextlib.suppress(ClientError, OSError):
            for h in await backend.list(include_exited=True):
                live.append(
                    AttachRow(
                        h.run_id,
                        h.task_id,
                        h.model,
                        h.agent,
                        handle_state(h.status, h.finished),
                        h.run_id,
                        h.labels.get("srez.image", ""),
                        backend.name,
                        serving=h.status == "running",
                    )
                )
    found = await asyncio.to_thread(find_results, shell.results_root)
    finished = [
        AttachRow(
            f.summary.run_id,
            f.summary.task_id,
            f.summary.model,
            f.summary.agent,
            "finished",
            str(f.path),
            "",
            "results",
        )
        for f in found
    ]
    return merge_rows(live, finished)


class RunRow(urwid.Text):
    """A selectable row."""

    _selectable = True

    def __init__(self, row: AttachRow) -> None:
        self.row = row
        run, task, model, agent, state, backend = row.cells()
        super().__init__(
            f"{task:<10} {model[:24]:<24} {agent:<10} {state:<9} {backend:<8} {run}", wrap="clip"
        )

    def keypress(self, size: Size, key: str) -> str | None:
        return key


class RunList(urwid.WidgetWrap[urwid.Widget]):
    """The screen."""

    help_contexts: ClassVar[tuple[Context, ...]] = ("list",)

    def __init__(self, shell: Shell, backends: Sequence[Backend], *, launch: Any = None) -> None:
        self.shell = shell
        self.backends = list(backends)
        self.launch = launch
        self.model = AttachList(recent=load_recent(shell.state_dir))
        self.tabs = urwid.Text("")
        self.filter = urwid.Text("")
        self.walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        header = urwid.Pile(
            [
                self.tabs,
                self.filter,
                urwid.Text(
                    (
                        "dim",
                        f"{'task':<10} {'model':<24} {'agent':<10} {'state':<9} {'backend':<8} run",
                    )
                ),
            ]
        )
        help_line = urwid.Text(
            (
                "dim",
                "type to filter · ←/→ tabs · enter attach · F5 refresh · ctrl l launch · ? help",
            )
        )
        super().__init__(urwid.Frame(urwid.ListBox(self.walker), header=header, footer=help_line))
        self.poller = ShownPoller(shell, "run-list refresh", self._reload, REFRESH_S)
        self.refresh_view()

    def render(self, size: Size, focus: bool = False) -> urwid.Canvas:
        self.poller.drawn()
        return super().render(size, focus)

    def reload(self) -> None:
        """Read the runs again (in the background)."""
        self.shell.spawn(self._reload(), "run-list")

    async def _reload(self) -> None:
        self.model.rows = await load_rows(self.backends, self.shell)
        self.model.recent = load_recent(self.shell.state_dir)
        self.refresh_view()
        self.shell.redraw()

    def refresh_view(self) -> None:
        """Show the model."""
        counts = self.model.counts()
        parts: list[Any] = []
        for tab in TABS:
            attr = "tab_on" if tab == self.model.tab else "tab"
            parts += [(attr, f" {TAB_TITLES[tab]} ({counts[tab]}) "), " "]
        self.tabs.set_text(parts)
        self.filter.set_text(f"Filter: {self.model.query}▏")
        selected = self.selected()
        rows = self.model.visible()
        widgets: list[urwid.Widget] = [urwid.AttrMap(RunRow(r), None, "focus") for r in rows]
        self.walker[:] = widgets or [urwid.Text(("dim", "(no runs here)"))]
        # A refresh must not move the cursor off the run the user is on.
        ids = [r.run_id for r in rows]
        if selected is not None and selected.run_id in ids:
            self.walker.set_focus(ids.index(selected.run_id))

    def selected(self) -> AttachRow | None:
        """The focused row."""
        widget, _ = self.walker.get_focus()
        inner = getattr(widget, "original_widget", None)
        return inner.row if isinstance(inner, RunRow) else None

    def keypress(self, size: Size, key: str) -> str | None:
        rest: str | None = super().keypress(size, key)
        if rest is None:
            return None
        action = action_for("list", rest)
        if action == "open":
            row = self.selected()
            if row is not None:
                self.model.attached(row.run_id)
                self.shell.open_run(row.ref)
        elif action in ("next_tab", "prev_tab"):
            self.model.next_tab(1 if action == "next_tab" else -1)
        elif action == "filter_back":
            self.model.backspace()
        elif action == "refresh":
            self.reload()
        elif action == "launch" and self.launch is not None:
            self.launch()
        elif len(rest) == 1 and rest.isprintable() and rest not in "?":
            self.model.type_char(rest)
        else:
            return rest
        self.refresh_view()
        return None
