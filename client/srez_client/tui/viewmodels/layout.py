"""Which areas of the run viewer are shown and how big they are: pure state the keys change.

The viewer has three areas: left (the dialog), center (the tabs of
:data:`srez_client.tui.viewmodels.tabs.TABS`, in their order) and bottom (logs). Each can be
hidden, and the two splits (left width, bottom height) move in steps; at least one of left and
center always stays visible, so the screen is never empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from srez_client.tui.viewmodels.tabs import TABS

Area = Literal["left", "center", "bottom"]
LEFT_MIN, LEFT_MAX, LEFT_STEP = 20, 80, 5
"""Left width, percent of the screen."""
BOTTOM_MIN, BOTTOM_MAX, BOTTOM_STEP = 3, 30, 2
"""Bottom height, rows."""


@dataclass(slots=True)
class Layout:
    """The viewer's areas and splits."""

    left: bool = True
    center: bool = True
    bottom: bool = True
    left_percent: int = 45
    bottom_rows: int = 8
    tab: str = TABS[0].name
    """The center tab shown (a :class:`~srez_client.tui.viewmodels.tabs.Tab` name)."""
    terminal: bool = True
    """Whether the Terminal tab is offered (the daemon has one and ``SREZ_TERMINAL`` allows)."""

    def tabs(self) -> list[str]:
        """The names of the center tabs offered."""
        return [t.name for t in TABS if self.terminal or not t.needs_terminal]

    def toggle(self, area: Area) -> None:
        """Hide or show an area; hiding the last of left and center shows the other."""
        setattr(self, area, not getattr(self, area))
        if not self.left and not self.center:
            self.center = area == "left"
            self.left = not self.center

    def widen_left(self, step: int) -> None:
        """Move the left/center split by ``step`` steps."""
        self.left_percent = max(LEFT_MIN, min(LEFT_MAX, self.left_percent + step * LEFT_STEP))

    def grow_bottom(self, step: int) -> None:
        """Make the logs area taller (or shorter) by ``step`` steps."""
        self.bottom_rows = max(BOTTOM_MIN, min(BOTTOM_MAX, self.bottom_rows + step * BOTTOM_STEP))

    def next_tab(self, step: int = 1) -> str:
        """The next center tab (shows the center area if hidden)."""
        tabs = self.tabs()
        index = tabs.index(self.tab) if self.tab in tabs else 0
        self.tab = tabs[(index + step) % len(tabs)]
        self.center = True
        return self.tab

    def choose(self, tab: str) -> bool:
        """Show ``tab`` if offered."""
        if tab not in self.tabs():
            return False
        self.tab = tab
        self.center = True
        return True
