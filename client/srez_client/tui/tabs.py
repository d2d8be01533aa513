"""The run viewer's center tabs as data: one :class:`Tab` row per tab.

A row drives everything about its tab: the layout offers the tabs in row order (a tab that
``needs_terminal`` only when the run has one), the key table binds ``key`` to the action
``tab_<name>`` with its ``help`` (so the ``?`` overlay lists it), the viewer shows ``title`` in the
tab bar and builds the tab's pane with ``view`` the first time the tab is shown, then refreshes
it after each change of the run's models that ``refresh_on`` names. Adding a tab is one row here,
its view module and its test.

The view factories import their widget module when called: the key table and the layout read
these rows and must stay free of urwid (and the AI tab's module, of its provider library).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    import urwid

    from srez_client.tui.shell import Shell
    from srez_client.tui.source import RunSource
    from srez_client.tui.viewer_feed import RunFeed


def _nothing() -> None:
    return


class TabHost(Protocol):
    """What a tab's view is built from (the run viewer)."""

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


@dataclass(frozen=True, slots=True)
class Tab:
    """One center tab of the run viewer."""

    name: str
    key: str
    """The key that shows the tab (its binding is in ``tui/keys.py``'s ``viewer`` context)."""
    title: str
    view: Callable[[TabHost], TabPane]
    note: str = ""
    """Said in the help after the title."""
    refresh_on: frozenset[str] = frozenset()
    """The model changes (``RunFeed``'s ``changed`` parts) after which the pane is refreshed."""
    needs_terminal: bool = False
    """Offered only when the run has a terminal (and ``SREZ_TERMINAL`` allows it)."""
    takes_focus: bool = False
    """Showing the tab moves the focus into it, so what is typed next goes to its pane rather
    than to the viewer's one-letter shortcuts."""

    @property
    def help(self) -> str:
        """The key's line in the help."""
        return f"center: {self.title}" + (f" ({self.note})" if self.note else "")

    @property
    def action(self) -> str:
        """The action name its key triggers."""
        return f"tab_{self.name}"


def _changes(host: TabHost) -> TabPane:
    from srez_client.tui.widgets.changes_view import ChangesView

    view = ChangesView(host.feed.models.changes)
    return TabPane(view, view.refresh)


def _files(host: TabHost) -> TabPane:
    from srez_client.tui.widgets.changes_view import FilesView

    view = FilesView(host.feed.models.changes)
    return TabPane(view, view.refresh)


def _evaluation(host: TabHost) -> TabPane:
    from srez_client.tui.widgets.evaluation_view import EvaluationView

    view = EvaluationView()
    return TabPane(view, lambda: view.show(host.feed.models.evaluation))


def _terminal(host: TabHost) -> TabPane:
    from srez_client.tui.widgets.terminal_view import TerminalPanel

    release = host.keys_for("terminal", "release")[0]
    panel = TerminalPanel(host.shell, host.source, host.viewer_action, release)
    return TabPane(panel, close=panel.close, focused=panel.grab)


def _ai(host: TabHost) -> TabPane:
    from srez_client.tui.widgets.explain_view import ExplainPanel

    return TabPane(ExplainPanel(host.shell, host.feed))


TABS: Final[tuple[Tab, ...]] = (
    Tab("changes", "1", "Changes", _changes, refresh_on=frozenset({"changes"})),
    Tab("files", "2", "Files", _files, refresh_on=frozenset({"changes"})),
    Tab("evaluation", "3", "Evaluation Result", _evaluation, refresh_on=frozenset({"evaluation"})),
    Tab(
        "terminal",
        "4",
        "Terminal",
        _terminal,
        "when the run offers one; keys then go to the shell",
        needs_terminal=True,
        takes_focus=True,
    ),
    Tab("ai", "5", "AI", _ai, "explain the run"),
)
"""Every center tab, in the order of the tab bar."""
TAB_BY_NAME: Final[dict[str, Tab]] = {tab.name: tab for tab in TABS}


__all__ = ["TABS", "TAB_BY_NAME", "Tab", "TabHost", "TabPane"]
