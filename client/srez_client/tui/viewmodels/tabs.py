"""The run viewer's center tabs as data: one :class:`Tab` row per tab.

A row drives everything about its tab: the layout offers the tabs in row order (a tab that
``needs_terminal`` only when the run has one), the key table binds ``key`` to the action
``tab_<name>`` with its ``help`` (so the ``?`` overlay lists it), the viewer shows ``title`` in the
tab bar and builds the tab's pane the first time the tab is shown (its builder is the entry of
:data:`srez_client.tui.widgets.tab_panes.PANES` under the row's ``name``), then refreshes it after
each change of the run's models that ``refresh_on`` names. Adding a tab is one row here, its
builder, its view module and its test.

The rows are pure data (no urwid, no widget): the layout and the key table read them from below
the widgets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Tab:
    """One center tab of the run viewer."""

    name: str
    key: str
    """The key that shows the tab (its binding is in ``tui/keys.py``'s ``viewer`` context)."""
    title: str
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


TABS: Final[tuple[Tab, ...]] = (
    Tab("changes", "1", "Changes", refresh_on=frozenset({"changes"})),
    Tab("files", "2", "Files", refresh_on=frozenset({"changes"})),
    Tab("evaluation", "3", "Evaluation Result", refresh_on=frozenset({"evaluation"})),
    Tab(
        "terminal",
        "4",
        "Terminal",
        "when the run offers one; keys then go to the shell",
        needs_terminal=True,
        takes_focus=True,
    ),
    Tab("ai", "5", "AI", "explain the run"),
)
"""Every center tab, in the order of the tab bar."""
TAB_BY_NAME: Final[dict[str, Tab]] = {tab.name: tab for tab in TABS}


__all__ = ["TABS", "TAB_BY_NAME", "Tab"]
