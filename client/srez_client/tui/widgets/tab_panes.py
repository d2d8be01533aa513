"""The panes of the run viewer's center tabs: how each tab row of
:data:`srez_client.tui.viewmodels.tabs.TABS` is built into a widget, by the row's name.

The viewer builds a tab's pane the first time the tab is shown, from itself as the
:class:`TabHost`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

import urwid

from srez_client.tui.shell import Shell
from srez_client.tui.source import RunSource
from srez_client.tui.viewer_feed import RunFeed
from srez_client.tui.widgets.changes_view import ChangesView, FilesView
from srez_client.tui.widgets.evaluation_view import EvaluationView
from srez_client.tui.widgets.explain_view import ExplainPanel
from srez_client.tui.widgets.terminal_view import TerminalPanel


def _nothing() -> None:
    return


class TabHost(Protocol):
    """What a tab's pane is built from (the run viewer)."""

    shell: Shell
    source: RunSource
    feed: RunFeed

    def viewer_action(self, key: str) -> str | None:
        """The viewer's action for ``key`` (the keymap is the host's: a pane does not import it)."""
        ...

    def keys_for(self, context: str, action: str) -> list[str]:
        """The keys bound to ``action`` in ``context`` of the keymap (for a pane's hints)."""
        ...


@dataclass(frozen=True, slots=True)
class TabPane:
    """A tab's widget, and what the viewer may ask of it."""

    widget: urwid.Widget
    refresh: Callable[[], None] = _nothing
    """Redraw from the models (after a change the tab's row names in ``refresh_on``)."""
    close: Callable[[], None] = _nothing
    """Release what the widget holds (the viewer is closing)."""
    focused: Callable[[], None] = _nothing
    """Showing the tab moved the focus into the pane (its row ``takes_focus``)."""


def _changes(host: TabHost) -> TabPane:
    view = ChangesView(host.feed.models.changes)
    return TabPane(view, view.refresh)


def _files(host: TabHost) -> TabPane:
    view = FilesView(host.feed.models.changes)
    return TabPane(view, view.refresh)


def _evaluation(host: TabHost) -> TabPane:
    view = EvaluationView()
    return TabPane(view, lambda: view.show(host.feed.models.evaluation))


def _terminal(host: TabHost) -> TabPane:
    release = host.keys_for("terminal", "release")[0]
    panel = TerminalPanel(host.shell, host.source, host.viewer_action, release)
    return TabPane(panel, close=panel.close, focused=panel.grab)


def _ai(host: TabHost) -> TabPane:
    return TabPane(ExplainPanel(host.shell, host.feed))


PANES: Final[dict[str, Callable[[TabHost], TabPane]]] = {
    "changes": _changes,
    "files": _files,
    "evaluation": _evaluation,
    "terminal": _terminal,
    "ai": _ai,
}
"""Each tab's pane builder, by the name of its row."""


__all__ = ["PANES", "TabHost", "TabPane"]
