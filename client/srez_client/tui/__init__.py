"""The urwid TUI: ``srez tui`` (the dashboard, from which every run and managed run is reachable)
and ``srez attach RUN`` (the run viewer).

Layout: view models with no urwid import (``*_model.py`` / ``viewmodels/``: pure, unit-tested),
widgets that render them, key bindings as data, and one application shell
(:class:`srez_client.tui.shell.Shell`) that screens talk to. urwid is imported only by the widget
modules, and litellm only by the AI tab once it is used.

Imports inside the package go one way, from the bottom up; no folder imports one above it, not
even inside a function or for annotations:

1. ``viewmodels/``: pure state and logic, and the data the screens share (the center tabs' rows);
2. the run sources and what they feed (``source.py``, ``source_results.py``, ``source_live.py``,
   ``viewer_feed.py``, ``recent.py``, ``explain_context.py``, ``explain.py``,
   ``explain_spend.py``), the key table (``keys.py``) and the shell's contract (``shell.py``);
3. ``widgets/``: the urwid widgets and the run viewer, each tab's pane among them
   (``widgets/tab_panes.py``);
4. ``dashboard/``: the managed-run screens;
5. ``app.py`` and ``terminal_screen.py``: the application shell on the real terminal.
"""
