"""urwid widgets of the TUI: each adapts one view model (``tui/viewmodels``) and renders it."""
