"""The Evaluation Result tab: the five checks, reward and components, steps, duration, errors."""

from __future__ import annotations

from typing import Any

import urwid

from srez_client.tui.viewmodels.evaluation import CHECK_TITLES, Evaluation, yes_no

_MARK = {"pass": ("success", "PASS"), "fail": ("error", "FAIL"), "n/a": ("dim", "N/A ")}


def evaluation_rows(ev: Evaluation, pending: str = "Not graded yet.") -> list[urwid.Widget]:
    """The tab's lines."""
    rows: list[urwid.Widget] = []
    if ev.note:
        rows.append(urwid.Text(("note", ev.note)))
    if not ev.graded:
        rows.append(urwid.Text(("dim", pending)))
    else:
        reward = "-" if ev.reward is None else f"{ev.reward:.3f}"
        rows.append(
            urwid.Text(
                [
                    ("title", f"Reward {reward}"),
                    f"   resolved {yes_no(ev.resolved)}   passed {yes_no(ev.passed)}",
                ]
            )
        )
        for check in ev.checks:
            attr, mark = _MARK[check.state]
            line: list[Any] = [(attr, f" {mark} "), f" {CHECK_TITLES.get(check.name, check.name)}"]
            rows.append(urwid.Text(line))
            rows.extend(urwid.Text(("dim", f"        {r}")) for r in check.reasons)
        if ev.components:
            rows.append(urwid.Text(("title", "Reward components")))
            for name, value, weight in ev.components:
                w = "" if weight is None else f" × {weight:g}"
                rows.append(urwid.Text(f"  {name:<10} {value:.3f}{w}"))
    facts = []
    if ev.steps is not None:
        facts.append(f"steps {ev.steps}" + (f"/{ev.max_steps}" if ev.max_steps else ""))
    if ev.duration_s is not None:
        facts.append(f"duration {ev.duration_s:.1f} s")
    if ev.end_reason:
        facts.append(f"ended by {ev.end_reason}")
    if facts:
        rows.append(urwid.Text("  ".join(facts)))
    if ev.timed_out:
        rows.append(urwid.Text(("red", "TIMEOUT: the agent hit its time limit")))
    if ev.error:
        rows.append(urwid.Text([("error", "Error: "), ev.error]))
        if ev.error_log:
            rows.append(urwid.Text(("dim", ev.error_log)))
    return rows


class EvaluationView(urwid.WidgetWrap[urwid.Widget]):
    """The tab; :meth:`show` replaces what it shows."""

    def __init__(self) -> None:
        self.walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker(
            [urwid.Text(("dim", "Starting…"))]
        )
        super().__init__(urwid.ListBox(self.walker))

    def show(self, ev: Evaluation, pending: str = "Not graded yet.") -> None:
        """Show an evaluation."""
        self.walker[:] = evaluation_rows(ev, pending)
