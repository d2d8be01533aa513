"""The managed-run dashboard, the model picker and the live monitor (``srez tui``).

``DashboardScreen(shell)`` is the widget the application shell opens; it reaches the shell only
through :class:`srez_client.tui.shell.Shell`. View models (``*_model.py``, ``commands.py``) have
no urwid import; widgets live in ``*_view.py``, ``forms.py`` and ``widgets.py``; the managed-run
API is reached through :mod:`.managed_source`.

The re-exports are lazy, so importing a view model does not import urwid (a test checks it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srez_client.tui.dashboard.dashboard_view import DashboardScreen
    from srez_client.tui.dashboard.monitor_view import MonitorScreen
    from srez_client.tui.dashboard.picker_model import PickerModel
    from srez_client.tui.dashboard.picker_view import PickerView

_WHERE = {
    "DashboardScreen": "dashboard_view",
    "MonitorScreen": "monitor_view",
    "PickerModel": "picker_model",
    "PickerView": "picker_view",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


__all__ = ["DashboardScreen", "MonitorScreen", "PickerModel", "PickerView"]
