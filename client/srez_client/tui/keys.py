"""Key bindings as data: one table mapping (context, key) to an action name and its help.

Screens look keys up here instead of matching literals, so the help overlay is generated from
the same table that dispatches, and a binding is changed in one place. Contexts: ``global``
(everywhere), ``viewer`` (the run viewer), ``list`` (the attach list and dashboard).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Binding:
    """One key of one context."""

    context: str
    key: str
    action: str
    help: str


BINDINGS: Final[tuple[Binding, ...]] = (
    Binding("global", "?", "help", "show this help"),
    Binding("global", "esc", "back", "close the top screen or dialog"),
    Binding("global", "ctrl q", "quit", "quit the application"),
    Binding("global", "ctrl r", "runs", "the runs: attach a live or finished run, launch new ones"),
    Binding("global", "ctrl v", "viewer", "back to the run viewer (the runs attached so far)"),
    Binding("viewer", "q", "detach", "detach from the run (asks what to do with it)"),
    Binding("viewer", "[", "toggle_left", "hide/show the dialog (left)"),
    Binding("viewer", "]", "toggle_center", "hide/show the center tabs"),
    Binding("viewer", "\\", "toggle_bottom", "hide/show the logs (bottom)"),
    Binding("viewer", "<", "narrow_left", "move the left/center split left"),
    Binding("viewer", ">", "widen_left", "move the left/center split right"),
    Binding("viewer", "+", "grow_bottom", "make the logs taller"),
    Binding("viewer", "-", "shrink_bottom", "make the logs shorter"),
    Binding("viewer", "tab", "next_focus", "move the focus to the next area"),
    Binding("viewer", "1", "tab_changes", "center: Changes"),
    Binding("viewer", "2", "tab_files", "center: Files"),
    Binding("viewer", "3", "tab_evaluation", "center: Evaluation Result"),
    Binding("viewer", "4", "tab_terminal", "center: Terminal (when the run offers one)"),
    Binding("viewer", "5", "tab_ai", "center: AI (explain the run)"),
    Binding("viewer", "enter", "toggle_item", "open/close the focused dialog item"),
    Binding("viewer", "a", "side_agent", "Changes: the agent's diff"),
    Binding("viewer", "t", "side_truth", "Changes: the reference (after the agent phase)"),
    Binding("viewer", "s", "side_split", "Changes: agent and reference side by side"),
    Binding("viewer", "r", "toggle_raw", "Changes: parsed cards or raw diff"),
    Binding("viewer", "l", "next_log", "logs: show the next log"),
    Binding("viewer", "G", "logs_bottom", "logs: jump to the end and follow it"),
    Binding("viewer", "d", "save_dialog", "save the dialog as dialog.jsonl"),
    Binding("viewer", "p", "save_patch", "save the agent's patch as patch.diff"),
    Binding("viewer", "m", "more_details", "more details: brief, alerts at T0, settings"),
    Binding("viewer", "R", "reconnect", "reconnect to the daemon now"),
    Binding("viewer", "T", "restart_terminal", "Terminal: restart its shell"),
    Binding("viewer", "ctrl n", "next_run", "next attached run"),
    Binding("viewer", "ctrl p", "prev_run", "previous attached run"),
    Binding("list", "enter", "open", "attach to the selected run"),
    Binding("list", "right", "next_tab", "next tab (Running, Exited, All, Recent)"),
    Binding("list", "left", "prev_tab", "previous tab"),
    Binding("list", "backspace", "filter_back", "delete from the filter"),
    Binding("list", "ctrl l", "launch", "launch new runs (wizard)"),
    Binding("list", "f5", "refresh", "refresh the list"),
)
"""Every binding."""


def action_for(context: str, key: str) -> str | None:
    """The action ``key`` triggers in ``context`` (then ``global``), or None."""
    for ctx in (context, "global"):
        for b in BINDINGS:
            if b.context == ctx and b.key == key:
                return b.action
    return None


def help_lines(contexts: tuple[str, ...] = ("viewer", "list", "global")) -> list[str]:
    """The help overlay's lines, grouped by context: this table's, then the dashboard screens'
    own tables (they dispatch from those, so the help is generated from what really acts)."""
    lines: list[str] = []
    for ctx in contexts:
        lines.append(f"{ctx}:")
        lines.extend(f"  {b.key:<10} {b.help}" for b in BINDINGS if b.context == ctx)
    from srez_client.tui.dashboard.dashboard_model import DASHBOARD_KEYS
    from srez_client.tui.dashboard.monitor_model import MONITOR_KEYS
    from srez_client.tui.dashboard.picker_model import PICKER_KEYS

    for name, table in (
        ("dashboard", DASHBOARD_KEYS),
        ("monitor", MONITOR_KEYS),
        ("model picker", PICKER_KEYS),
    ):
        lines.append(f"{name}:")
        lines.extend(
            f"  {'space' if key == ' ' else key:<10} {action.replace('_', ' ')}"
            for key, action in table.items()
        )
    return lines
