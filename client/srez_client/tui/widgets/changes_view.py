"""The Changes and Files tabs: diff cards (or the raw diff), Agent / Truth / Split.

The Truth side is always under a banner naming it the reference fix, so nobody mistakes the
task's answer for the agent's work. The side buttons beyond Agent appear by themselves when the
model learns the agent phase is over (a phase frame), with no reload.
"""

from __future__ import annotations

from typing import Any

import urwid

from srez_client.sanitize import sanitize
from srez_client.tui.viewmodels.changes import TRUTH_BANNER, ChangesModel, FileCard


def card_widgets(cards: list[FileCard], empty: str) -> list[urwid.Widget]:
    """One block per file: a header with counts, then its lines coloured by kind."""
    if not cards:
        return [urwid.Text(("dim", empty))]
    out: list[urwid.Widget] = []
    for card in cards:
        head = f"{card.status} {card.path}  "
        out.append(
            urwid.Text(
                [("title", head), ("add", f"+{card.added}"), " ", ("del", f"-{card.removed}")]
            )
        )
        out.extend(urwid.Text((kind, f"  {text}"), wrap="clip") for kind, text in card.lines)
        out.append(urwid.Divider())
    return out


def _raw(text: str) -> list[urwid.Widget]:
    return [urwid.Text(line or " ", wrap="clip") for line in sanitize(text).split("\n")]


def side_widgets(model: ChangesModel, truth: bool) -> list[urwid.Widget]:
    """The body of one side."""
    if truth:
        body = (
            _raw(model.reference or "")
            if model.raw
            else card_widgets(model.truth_cards, "(the reference changes nothing)")
        )
        return [urwid.AttrMap(urwid.Text(f" {TRUTH_BANNER} "), "banner"), *body]
    if model.raw:
        return (
            _raw(model.agent_diff)
            if model.agent_diff
            else [urwid.Text(("dim", "(no changes yet)"))]
        )
    return card_widgets(model.agent_cards, "(no changes yet)")


def split_rows(model: ChangesModel) -> list[urwid.Widget]:
    """Agent | reference, file by file: the same file's cards side by side, so what the agent
    changed and what the fix changes line up; Raw puts the two whole diffs side by side."""
    heads = urwid.Columns(
        [
            urwid.Text(("title", "Agent")),
            urwid.AttrMap(urwid.Text(f" {TRUTH_BANNER} "), "banner"),
        ],
        dividechars=1,
    )
    if model.raw:
        left = urwid.Pile(side_widgets(model, False))
        right = urwid.Pile(_raw(model.reference or ""))
        return [heads, urwid.Columns([left, right], dividechars=1)]
    pairs = model.split_pairs()
    if not pairs:
        return [heads, urwid.Text(("dim", "(neither side changes a file)"))]
    rows: list[urwid.Widget] = [heads]
    for _path, agent, truth in pairs:
        left = urwid.Pile(card_widgets([agent], "") if agent else [_absent(truth, "the agent")])
        right = urwid.Pile(card_widgets([truth], "") if truth else [_absent(agent, "the fix")])
        rows.append(urwid.Columns([left, right], dividechars=1))
    return rows


def _absent(other: FileCard | None, who: str) -> urwid.Widget:
    path = other.path if other else ""
    return urwid.Text(("dim", f"({who} leaves {path} alone)"))


class ChangesView(urwid.WidgetWrap[urwid.Widget]):
    """The Changes tab."""

    def __init__(self, model: ChangesModel) -> None:
        self.model = model
        self.header = urwid.Text("")
        self.walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.body = urwid.ListBox(self.walker)
        self._frame: urwid.Frame[Any, Any, Any] = urwid.Frame(self.body, header=self.header)
        super().__init__(self._frame)
        self.refresh()

    def buttons(self) -> list[Any]:
        """The header markup: the sides offered, the mode and the similarity."""
        names = {"agent": "a Agent", "truth": "t Truth", "split": "s Split"}
        parts: list[Any] = []
        for side in self.model.sides():
            parts += [("tab_on" if side == self.model.side else "tab", f" {names[side]} "), " "]
        parts.append(("tab", f" r {'Raw' if self.model.raw else 'Parsed'} "))
        files, added, removed = self.model.totals()
        parts.append(f"  {files} files ")
        parts += [("add", f"+{added}"), " ", ("del", f"-{removed}")]
        sim = self.model.similarity_text()
        if sim is not None:
            parts += ["  ", (sim[0], sim[1])]
        return parts

    def refresh(self) -> None:
        """Rebuild from the model."""
        self.header.set_text(self.buttons())
        m = self.model
        if m.side == "split" and m.agent_over:
            rows = split_rows(m)
        else:
            rows = side_widgets(m, m.side == "truth")
        self.walker[:] = rows


class FilesView(urwid.WidgetWrap[urwid.Widget]):
    """The Files tab: one line per changed file (from the same parsed diff)."""

    def __init__(self, model: ChangesModel) -> None:
        self.model = model
        self.walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        super().__init__(urwid.ListBox(self.walker))
        self.refresh()

    def refresh(self) -> None:
        """Rebuild from the model."""
        rows: list[urwid.Widget] = [
            urwid.Text(
                [
                    ("title", f"{c.status}  {c.path}  "),
                    ("add", f"+{c.added}"),
                    " ",
                    ("del", f"-{c.removed}"),
                ]
            )
            for c in self.model.agent_cards
        ]
        self.walker[:] = rows or [urwid.Text(("dim", "(no changed files)"))]
