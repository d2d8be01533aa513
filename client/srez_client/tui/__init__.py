"""The urwid TUI: ``srez tui`` (the dashboard, from which every run and managed run is reachable)
and ``srez attach RUN`` (the run viewer).

Layout: view models with no urwid import (``*_model.py`` / ``viewmodels/``: pure, unit-tested),
widgets that render them, key bindings as data, and one application shell
(:class:`srez_client.tui.shell.Shell`) that screens talk to. urwid is imported only by the widget
modules, and litellm only by the AI tab once it is used.
"""
