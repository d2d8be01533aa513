"""The model picker as a pure view model: a checklist over the catalogue plus manual slugs.

No urwid here (a test asserts it): the widget in :mod:`.picker_view` only draws :meth:`lines` and
forwards key names to :meth:`PickerModel.press`, so every behaviour is tested as plain Python.

Decisions where the issue is silent:

* Row numbers are global within the current filter (see :mod:`.commands`), and every row shows
  its number, so ``select 12`` works from any page.
* "Visible rows" for ``a`` / ``u`` are all rows that pass the filter, on every page: paging is an
  artefact of the terminal's height, and what gets selected must not depend on it.
* ``d`` (defaults) selects exactly the catalogue's ``default`` rows and unselects the rest,
  manual rows included; the manual rows stay listed.
* A manual slug that is already listed is just selected. ``m`` accepts several slugs separated
  by spaces or commas; one invalid slug rejects the whole input.
* The filter is live: it applies as it is typed; Esc restores the filter it replaced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from srez_client.models_catalog import Catalog, valid_slug
from srez_client.sanitize import sanitize_line
from srez_client.tui.dashboard.commands import CommandError, parse_command
from srez_client.tui.keys import context_action

PromptKind = Literal["filter", "manual", "command"]
Outcome = Literal["accepted", "cancelled"]
_PROMPT_LABEL: Final[dict[PromptKind, str]] = {"filter": "/", "manual": "slugs: ", "command": ":"}


@dataclass(frozen=True, slots=True)
class PickerRow:
    """One model of the checklist."""

    slug: str
    note: str = ""
    manual: bool = False


@dataclass(slots=True)
class Prompt:
    """A one-line text input the picker is reading (filter, manual slugs, typed command)."""

    kind: PromptKind
    text: str = ""
    previous: str = ""
    """The filter in force before ``/`` (restored on Esc)."""


@dataclass(slots=True)
class PickerModel:
    """The checked set, the filter, the page and the cursor of the model picker."""

    rows: list[PickerRow]
    defaults: tuple[str, ...] = ()
    selected: set[str] = field(default_factory=set)
    page_size: int = 10
    filter: str = ""
    cursor: int = 0
    """Index of the focused row within the filtered view."""
    prompt: Prompt | None = None
    message: str = ""
    error: bool = False
    outcome: Outcome | None = None

    @classmethod
    def from_catalog(cls, catalog: Catalog, selected: Iterable[str] | None = None) -> PickerModel:
        """A picker over ``catalog``; starts on ``selected`` (default: the catalogue defaults).

        Selected slugs missing from the catalogue become manual rows, so nothing is lost.
        """
        rows = [PickerRow(m.slug, sanitize_line(m.note)) for m in catalog.models]
        model = cls(rows, catalog.defaults)
        start = list(catalog.defaults if selected is None else selected)
        model._add_manual([s for s in start if valid_slug(s)])
        model.selected = {s for s in start if valid_slug(s)}
        if catalog.problems:
            model._say(f"catalogue: {sanitize_line(catalog.problems[0])}", error=True)
        return model

    # -- the filtered view and its pages ---------------------------------------------------
    def view(self) -> list[PickerRow]:
        """Rows that pass the filter (case-insensitive substring of the slug or the note)."""
        needle = self.filter.lower()
        return [r for r in self.rows if needle in r.slug.lower() or needle in r.note.lower()]

    @property
    def page(self) -> int:
        """The page (0-based) holding the cursor."""
        return self.cursor // self.page_size

    def page_count(self) -> int:
        """How many pages the filtered view takes (at least 1)."""
        return max(1, -(-len(self.view()) // self.page_size))

    def page_rows(self) -> list[tuple[int, PickerRow]]:
        """``(row number, row)`` of the current page; numbers are 1-based within the filter."""
        start = self.page * self.page_size
        view = self.view()[start : start + self.page_size]
        return [(start + i + 1, row) for i, row in enumerate(view)]

    def set_page_size(self, size: int) -> None:
        """Called by the widget when its height changes; the cursor keeps its row."""
        self.page_size = max(1, size)

    def chosen(self) -> list[str]:
        """The selected slugs in row order (what Enter hands back)."""
        return [r.slug for r in self.rows if r.slug in self.selected]

    def lines(self) -> list[tuple[bool, str]]:
        """``(focused, text)`` per row of the current page, ``[x] 3. slug  note``."""
        width = len(str(len(self.view()) or 1))
        out = []
        for number, row in self.page_rows():
            box = "[x]" if row.slug in self.selected else "[ ]"
            tag = " (manual)" if row.manual else ""
            note = f"  {row.note}" if row.note else ""
            focused = number - 1 == self.cursor
            out.append((focused, f"{box} {number:>{width}}. {row.slug}{tag}{note}"))
        return out

    def status(self) -> str:
        """The footer: counts, page and filter."""
        shown = len(self.view())
        parts = [f"{len(self.selected)} selected", f"page {self.page + 1}/{self.page_count()}"]
        parts.append(f"filter '{self.filter}': {shown} shown" if self.filter else f"{shown} models")
        return " · ".join(parts)

    def prompt_line(self) -> str | None:
        """The text input line while a prompt is open."""
        if self.prompt is None:
            return None
        return _PROMPT_LABEL[self.prompt.kind] + self.prompt.text

    # -- keys --------------------------------------------------------------------------------
    def press(self, key: str) -> bool:
        """Handles one urwid key name: a prompt gets every key first, then the ``picker`` keys.

        Returns False for a key the picker does not bind (the widget passes it on, so the
        application's global keys still work); nothing changes then.
        """
        if self.prompt is not None:
            self._prompt_key(key)
            return True
        action = context_action("picker", key)
        if action is None:
            return False
        self.message, self.error = "", False
        getattr(self, f"_do_{action}")()
        return True

    def type(self, keys: Sequence[str]) -> None:
        """Presses each key of ``keys`` (a string types its characters)."""
        for key in keys:
            self.press(key)

    def _prompt_key(self, key: str) -> None:
        assert self.prompt is not None
        prompt = self.prompt
        if key == "esc":
            self.prompt = None
            if prompt.kind == "filter":
                self._set_filter(prompt.previous)
            return
        if key == "enter":
            self.prompt = None
            self._submit(prompt)
            return
        if key == "backspace":
            prompt.text = prompt.text[:-1]
        elif len(key) == 1 and key.isprintable():
            prompt.text += key
        else:
            return
        if prompt.kind == "filter":
            self._set_filter(prompt.text)

    def _submit(self, prompt: Prompt) -> None:
        if prompt.kind == "filter":
            self._set_filter(prompt.text.strip())
        elif prompt.kind == "manual":
            self._submit_manual(prompt.text)
        else:
            self._submit_command(prompt.text)

    def _submit_manual(self, text: str) -> None:
        slugs = [s for s in re.split(r"[\s,]+", text) if s]
        if not slugs:
            self._say("no slug given; nothing added", error=True)
            return
        bad = [s for s in slugs if not valid_slug(s)]
        if bad:
            shown = ", ".join(repr(sanitize_line(s)) for s in bad)
            self._say(f"not a model slug: {shown} (expected provider/model); nothing added", True)
            return
        self._add_manual(slugs)
        self.selected.update(slugs)
        self._say(f"added and selected {len(slugs)} model(s)")

    def _submit_command(self, text: str) -> None:
        view = self.view()
        try:
            command = parse_command(text, len(view))
        except CommandError as e:
            self._say(f"{sanitize_line(str(e))}; nothing changed", error=True)
            return
        slugs = [view[n - 1].slug for n in command.rows]
        for slug in slugs:
            if command.verb == "select" or (command.verb == "toggle" and slug not in self.selected):
                self.selected.add(slug)
            else:
                self.selected.discard(slug)
        verbs = {"select": "selected", "drop": "dropped", "toggle": "toggled"}
        self._say(f"{verbs[command.verb]} {len(slugs)} row(s)")

    # -- actions (the picker context of tui/keys.py names them) ----------------------------
    def _do_cursor_up(self) -> None:
        self.cursor = max(0, self.cursor - 1)

    def _do_cursor_down(self) -> None:
        self.cursor = min(max(0, len(self.view()) - 1), self.cursor + 1)

    def _do_page_prev(self) -> None:
        self.cursor = max(0, self.cursor - self.page_size) if self.page else self.cursor

    def _do_page_next(self) -> None:
        if self.page + 1 < self.page_count():
            self.cursor = min(len(self.view()) - 1, self.cursor + self.page_size)

    def _do_toggle(self) -> None:
        view = self.view()
        if view:
            slug = view[self.cursor].slug
            self.selected.symmetric_difference_update({slug})

    def _do_accept(self) -> None:
        self.outcome = "accepted"  # an empty choice is allowed: a run of baselines needs no model

    def _do_cancel(self) -> None:
        self.outcome = "cancelled"

    def _do_filter(self) -> None:
        self.prompt = Prompt("filter", self.filter, previous=self.filter)

    def _do_clear_filter(self) -> None:
        self._set_filter("")

    def _do_select_visible(self) -> None:
        self.selected.update(r.slug for r in self.view())

    def _do_clear_visible(self) -> None:
        self.selected.difference_update(r.slug for r in self.view())

    def _do_clear_all(self) -> None:
        self.selected.clear()

    def _do_defaults(self) -> None:
        self.selected = set(self.defaults)
        self._say(f"reset to the {len(self.defaults)} default model(s)")

    def _do_manual(self) -> None:
        self.prompt = Prompt("manual")

    def _do_command(self) -> None:
        self.prompt = Prompt("command")

    # -- helpers -----------------------------------------------------------------------------
    def _set_filter(self, text: str) -> None:
        self.filter = text
        self.cursor = 0

    def _add_manual(self, slugs: Iterable[str]) -> None:
        known = {r.slug for r in self.rows}
        for slug in slugs:
            if slug not in known:
                self.rows.append(PickerRow(slug, manual=True))
                known.add(slug)

    def _say(self, message: str, error: bool = False) -> None:
        self.message, self.error = message, error


__all__ = ["Outcome", "PickerModel", "PickerRow", "Prompt", "PromptKind"]
