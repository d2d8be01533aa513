"""The colour palette, as data: (name, foreground, background) for 16-colour terminals.

Widgets name attributes, never colours, so a theme is a change here only.
"""

from __future__ import annotations

from typing import Final

PALETTE: Final[list[tuple[str, str, str]]] = [
    ("bar", "white", "dark blue"),
    ("bar_dim", "light gray", "dark blue"),
    ("status", "black", "light gray"),
    ("title", "white,bold", ""),
    ("heading", "yellow,bold", ""),
    ("bold", "white,bold", ""),
    ("code", "light cyan", ""),
    ("bullet", "yellow", ""),
    ("text", "", ""),
    ("dim", "dark gray", ""),
    ("focus", "black", "light gray"),
    ("tab", "light gray", "dark gray"),
    ("tab_on", "white,bold", "dark cyan"),
    ("add", "light green", ""),
    ("del", "light red", ""),
    ("hunk", "light cyan", ""),
    ("meta", "dark gray", ""),
    ("ctx", "", ""),
    ("green", "light green,bold", ""),
    ("yellow", "yellow,bold", ""),
    ("red", "light red,bold", ""),
    ("running", "yellow", ""),
    ("success", "light green", ""),
    ("error", "light red", ""),
    ("banner", "black", "yellow"),
    ("note", "light magenta", ""),
    ("dialog", "black", "light gray"),
]
"""The palette MainLoop gets."""
