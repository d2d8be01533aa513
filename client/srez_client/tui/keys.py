"""Key bindings as data: the one table mapping (context, key) to an action name and its help.

Screens look keys up here instead of matching literals, so the help overlay is generated from
the same table that dispatches, and a binding is changed in one place. Contexts: ``global``
(everywhere), ``viewer`` (the run viewer; its tab keys come from the rows of
:data:`srez_client.tui.viewmodels.tabs.TABS`), ``terminal`` (its Terminal tab, while the focus is
in the shell), ``list`` (the attach list), and the managed-run screens ``dashboard``, ``monitor``,
``picker`` (the model picker), ``form`` (the create and add-target forms) and ``confirm`` (their
yes/no questions). Screens only consume this table; it imports no screen and no urwid (only the
tab rows under ``tui/viewmodels``), so the screens' view models (``dashboard/*_model.py``) may
read it.

A key means one thing on the dashboard and the monitor (``p`` a cooperative pause, ``s`` and
``S`` pause and stop the in-flight run now, ``c`` clears the pause flag, ``q`` goes back; the
dashboard rebuilds the summaries with ``b``): :data:`SAME_MEANING` lists those two contexts, and
the tests hold the table to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from srez_client.tui.viewmodels.tabs import TABS

Context = Literal[
    "global", "viewer", "terminal", "list", "dashboard", "monitor", "picker", "form", "confirm"
]
CONTEXT_TITLES: Final[dict[Context, str]] = {
    "viewer": "viewer",
    "terminal": "viewer's Terminal tab (keys go to the shell)",
    "list": "list",
    "global": "global",
    "dashboard": "dashboard",
    "monitor": "monitor",
    "picker": "model picker",
    "form": "managed-run forms",
    "confirm": "questions",
}
"""The help overlay's section titles, in its order."""


@dataclass(frozen=True, slots=True)
class Binding:
    """One key of one context."""

    context: Context
    key: str
    """urwid's name of the key (``" "`` for the space bar)."""
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
    *(Binding("viewer", tab.key, tab.action, tab.help) for tab in TABS),
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
    Binding(
        "terminal",
        "ctrl a",
        "release",
        "the next key is the viewer's (ctrl a 1: Changes, ctrl a tab: leave); twice: sends ctrl a",
    ),
    Binding("list", "enter", "open", "attach to the selected run"),
    Binding("list", "right", "next_tab", "next tab (Running, Finished, Exited, All, Recent)"),
    Binding("list", "left", "prev_tab", "previous tab"),
    Binding("list", "backspace", "filter_back", "delete from the filter"),
    Binding("list", "ctrl l", "launch", "launch new runs (wizard)"),
    Binding("list", "f5", "refresh", "refresh the list"),
    Binding("dashboard", "up", "cursor_up", "move up"),
    Binding("dashboard", "down", "cursor_down", "move down"),
    Binding("dashboard", "n", "create", "create a managed run (a form)"),
    Binding("dashboard", "enter", "monitor", "monitor the target under the cursor"),
    Binding("dashboard", "r", "run_target", "run the target under the cursor, then monitor it"),
    Binding("dashboard", "a", "add_target", "add targets to the run"),
    Binding("dashboard", "x", "remove_target", "remove the target (asks; its artefacts stay)"),
    Binding("dashboard", "p", "pause", "pause: the runner stops after its current task"),
    Binding("dashboard", "s", "stop", "stop now: pause, then end the runner and its in-flight run"),
    Binding("dashboard", "S", "stop", "stop now (as s)"),
    Binding("dashboard", "c", "clear_pause", "clear the pause flag"),
    Binding("dashboard", "b", "summarize", "rebuild the run's summaries"),
    Binding("dashboard", "e", "export_queue", "export the run's queue"),
    Binding("dashboard", "D", "delete_artifacts", "delete the target's artefacts (asks)"),
    Binding("dashboard", "X", "delete_run", "delete the run and its folder (asks)"),
    Binding("dashboard", "g", "refresh", "refresh the list"),
    Binding("dashboard", "q", "back", "close the dashboard"),
    Binding("monitor", "up", "cursor_up", "move up"),
    Binding("monitor", "down", "cursor_down", "move down"),
    Binding("monitor", "enter", "open_task", "open the task under the cursor in the run viewer"),
    Binding(
        "monitor", "p", "pause", "pause (cooperative): the runner stops after the current task"
    ),
    Binding("monitor", "s", "stop", "stop now: pause, then end the in-flight run"),
    Binding("monitor", "S", "stop", "stop now (as s)"),
    Binding("monitor", "c", "clear_pause", "clear the pause flag"),
    Binding("monitor", "q", "back", "back to the run list"),
    Binding("monitor", "esc", "back", "back to the run list"),
    Binding("picker", "up", "cursor_up", "move up"),
    Binding("picker", "down", "cursor_down", "move down"),
    Binding("picker", " ", "toggle", "select or unselect the model under the cursor"),
    Binding("picker", "enter", "accept", "accept the selection"),
    Binding("picker", "left", "page_prev", "previous page"),
    Binding("picker", "right", "page_next", "next page"),
    Binding("picker", "/", "filter", "filter as you type (Esc restores the previous filter)"),
    Binding("picker", "f", "clear_filter", "clear the filter"),
    Binding("picker", "a", "select_visible", "select every row the filter shows (all pages)"),
    Binding("picker", "u", "clear_visible", "unselect every row the filter shows"),
    Binding("picker", "c", "clear_all", "unselect everything"),
    Binding("picker", "d", "defaults", "select exactly the catalogue's defaults"),
    Binding("picker", "m", "manual", "add model slugs by hand"),
    Binding("picker", ":", "command", "typed command: select 1-5 | drop 2,4 | 1-3 (toggle)"),
    Binding("picker", "esc", "cancel", "cancel"),
    Binding("form", "tab", "next_field", "next field (the rest go to the focused field)"),
    Binding("form", "shift tab", "prev_field", "previous field"),
    Binding("confirm", "y", "yes", "yes"),
    Binding("confirm", "Y", "yes", "yes"),
    Binding("confirm", "n", "no", "no"),
    Binding("confirm", "N", "no", "no"),
    Binding("confirm", "esc", "no", "no"),
)
"""Every binding."""
SAME_MEANING: Final[tuple[Context, ...]] = ("dashboard", "monitor")
"""Contexts where a key bound in more than one means the same action in each (``enter`` aside:
it opens what is under the cursor, a target's monitor or a task's run)."""
_ACTIONS: Final[dict[tuple[Context, str], str]] = {(b.context, b.key): b.action for b in BINDINGS}


def context_action(context: Context, key: str) -> str | None:
    """The action ``key`` triggers in ``context`` alone, or None (the screen passes the key on)."""
    return _ACTIONS.get((context, key))


def action_for(context: Context, key: str) -> str | None:
    """The action ``key`` triggers in ``context``, then in ``global``, or None."""
    return context_action(context, key) or context_action("global", key)


def context_keys(context: Context) -> dict[str, str]:
    """Key → action of one context."""
    return {b.key: b.action for b in BINDINGS if b.context == context}


def keys_for(context: str, action: str) -> list[str]:
    """The keys bound to ``action`` in ``context`` (in table order)."""
    return [b.key for b in BINDINGS if b.context == context and b.action == action]


def key_label(key: str) -> str:
    """A key as the help shows it."""
    return "space" if key == " " else key


def help_lines(first: Sequence[Context] = ()) -> list[str]:
    """The help overlay's lines, one section per context, from the table that dispatches.

    ``first``: the current screen's contexts, listed first with the global keys after them and
    the other screens' keys below (for reference): the keys one can press now come first.
    """
    ours = [*first, "global"] if first else list(CONTEXT_TITLES)
    ours = list(dict.fromkeys(ours))
    others = [ctx for ctx in CONTEXT_TITLES if ctx not in ours]
    lines: list[str] = []
    for ctx in ours:
        lines.extend(_section(ctx))
    if first and others:
        lines += ["", "Other screens:"]
        for ctx in others:
            lines.extend(_section(ctx))
    return lines


def _section(ctx: Context) -> list[str]:
    return [
        f"{CONTEXT_TITLES[ctx]}:",
        *(f"  {key_label(b.key):<10} {b.help}" for b in BINDINGS if b.context == ctx),
    ]
