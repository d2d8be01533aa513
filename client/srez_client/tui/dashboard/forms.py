"""The create-run and add-target forms (urwid), both built on :class:`TargetFields`.

Navigation is urwid's own (Up/Down between fields, Space or Enter on a box or button) plus Tab
and Shift-Tab; "Pick models…" opens the model picker on the models chosen so far. Checking the
fields is :mod:`.form_model`'s job; the form shows its one-line error and keeps what was typed.

The focused field is highlighted. Moving onto the buttons from a field always lands on the
first one (Create / Add), never on Cancel: urwid would pick the button under the cursor's
column, and Down from a long field then Enter threw the whole form away.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import urwid

from srez_client.backends.registry import BACKEND_NAMES
from srez_client.managed.models import BASELINES, Target
from srez_client.models_catalog import Catalog
from srez_client.sanitize import sanitize_line
from srez_client.tui.dashboard.form_model import DEFAULT_BACKEND, build_targets, create_request
from srez_client.tui.dashboard.picker_model import PickerModel
from srez_client.tui.dashboard.picker_view import PickerView
from srez_client.tui.dashboard.source import CreateRequest
from srez_client.tui.keys import Context, context_action
from srez_client.tui.shell import Shell


class TargetFields:
    """Baseline boxes and the chosen models: the part both forms share."""

    def __init__(
        self, shell: Shell, catalog: Catalog, models: Sequence[str], skip: Sequence[str] = ()
    ) -> None:
        """Start on ``models``; baselines named in ``skip`` (already targets) are not offered."""
        self.shell = shell
        self.catalog = catalog
        self.models = list(models)
        self.boxes = {b: urwid.CheckBox(b) for b in BASELINES if b not in skip}
        self._chosen = urwid.Text("")
        self.pick_button = urwid.Button("Pick models…", on_press=lambda _b: self.open_picker())
        self._show()

    def widgets(self) -> list[urwid.Widget]:
        """The rows to put in a form."""
        rows: list[urwid.Widget] = []
        if self.boxes:
            rows.append(urwid.Text("Baselines (no model, no cost):"))
            rows += [urwid.Padding(box, left=2) for box in self.boxes.values()]
        rows += [urwid.Text("LLM models:"), urwid.Padding(self._chosen, left=2)]
        rows.append(urwid.Padding(urwid.AttrMap(self.pick_button, None, "focus"), width=18))
        return rows

    def baselines(self) -> list[str]:
        """The ticked baselines."""
        return [name for name, box in self.boxes.items() if box.get_state()]

    def open_picker(self) -> None:
        """Pushes the model picker, starting on the models chosen so far."""
        model = PickerModel.from_catalog(self.catalog, self.models)
        self.shell.push(PickerView(model, self._picked), "Pick models")

    def _picked(self, slugs: list[str] | None) -> None:
        self.shell.pop()
        if slugs is not None:
            self.models = slugs
            self._show()

    def _show(self) -> None:
        shown = ", ".join(self.models) if self.models else "(none)"
        self._chosen.set_text(f"{len(self.models)}: {sanitize_line(shown)}")


class _Form(urwid.WidgetWrap[urwid.Widget]):
    """A vertical form with a message line and Tab navigation."""

    help_contexts: ClassVar[tuple[Context, ...]] = ("form",)

    def __init__(self, title: str, rows: list[urwid.Widget], ok: str, cancel: Callable[[], None]):
        self.message = urwid.Text("")
        self.ok_button = urwid.Button(ok, on_press=lambda _b: self.submit())
        self.buttons = urwid.Columns(
            [
                (12, urwid.AttrMap(self.ok_button, None, "focus")),
                (12, urwid.AttrMap(urwid.Button("Cancel", lambda _b: cancel()), None, "focus")),
            ],
            dividechars=2,
        )
        fields = [urwid.AttrMap(r, None, "focus") if r.selectable() else r for r in rows]
        self.pile = urwid.Pile(
            [urwid.Text(("title", title)), urwid.Divider("─"), *fields, urwid.Divider()]
            + [self.buttons, urwid.Divider(), self.message]
        )
        super().__init__(urwid.Filler(self.pile, valign="top"))

    def submit(self) -> None:
        """Checks the fields and acts; subclasses implement it."""
        raise NotImplementedError

    def say(self, text: str, error: bool = True) -> None:
        """Shows one line under the buttons."""
        self.message.set_text(("error", sanitize_line(text)) if error else sanitize_line(text))

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        """The ``form`` keys (Tab / Shift-Tab) move between fields; the rest go to the fields."""
        before = self.pile.focus_position
        action = context_action("form", key)
        if action is None:
            rest: str | None = super().keypress(size, key)
        else:
            rest = None
            step = 1 if action == "next_field" else -1
            rows = self.pile.contents
            index = self.pile.focus_position
            for _ in rows:
                index = (index + step) % len(rows)
                if rows[index][0].selectable():
                    self.pile.focus_position = index
                    break
        if self.pile.focus_position != before and self.pile.focus is self.buttons:
            self.buttons.focus_position = 0  # arriving on the buttons: the first, not Cancel
        return rest


class CreateForm(_Form):
    """Name, targets, tasks, backend and daily budget of a new managed run."""

    def __init__(
        self,
        shell: Shell,
        catalog: Catalog,
        on_create: Callable[[CreateRequest], None],
    ) -> None:
        """``on_create`` gets a checked request (it creates the run and closes the form)."""
        self.on_create = on_create
        self.name = urwid.Edit("Name:          ")
        self.targets = TargetFields(shell, catalog, catalog.defaults)
        self.tasks = urwid.Edit("Tasks:         ")
        group: list[urwid.RadioButton] = []
        self.backends = {
            b: urwid.RadioButton(group, b, state=b == DEFAULT_BACKEND) for b in BACKEND_NAMES
        }
        self.budget = urwid.Edit("Budget $/day:  ")
        self.cost_cap = urwid.Edit("Cost cap $/task: ")
        rows: list[urwid.Widget] = [
            self.name,
            urwid.Divider(),
            *self.targets.widgets(),
            urwid.Divider(),
            self.tasks,
            urwid.Text(
                (
                    "dim",
                    "  empty or 'all': every task; or task ids separated by commas (sre-001, sre-007)",
                )
            ),
            urwid.Text("Backend:"),
            *[urwid.Padding(r, left=2) for r in self.backends.values()],
            self.budget,
            urwid.Text(("dim", "  empty: no daily budget (shared by all managed runs)")),
            self.cost_cap,
            urwid.Text(("dim", "  reserved per LLM task; needed with a budget and LLM targets")),
        ]
        super().__init__("New managed run", rows, "Create", shell.pop)

    def submit(self) -> None:
        """Builds the request, or shows what is wrong."""
        backend = next(b for b, r in self.backends.items() if r.get_state())
        try:
            request = create_request(
                name=self.name.edit_text,
                baselines=self.targets.baselines(),
                models=self.targets.models,
                tasks=self.tasks.edit_text,
                backend=backend,
                budget=self.budget.edit_text,
                cost_cap=self.cost_cap.edit_text,
            )
        except ValueError as e:
            self.say(str(e))
            return
        self.say("creating…", error=False)
        self.on_create(request)


class AddTargetForm(_Form):
    """Baselines and models to append to a run's queue."""

    def __init__(
        self,
        shell: Shell,
        catalog: Catalog,
        run: str,
        existing: Sequence[Target],
        on_add: Callable[[tuple[Target, ...]], None],
    ) -> None:
        """Offers what ``existing`` does not hold yet; ``on_add`` gets the new targets."""
        self.on_add = on_add
        self.existing = [t.name for t in existing]
        self.targets = TargetFields(shell, catalog, [], skip=self.existing)
        title = f"Add targets to {sanitize_line(run)}"
        super().__init__(title, self.targets.widgets(), "Add", shell.pop)

    def submit(self) -> None:
        """Builds the new targets, or shows what is wrong."""
        try:
            targets = build_targets(self.targets.baselines(), self.targets.models, self.existing)
        except ValueError as e:
            self.say(str(e))
            return
        self.on_add(targets)


__all__ = ["AddTargetForm", "CreateForm", "TargetFields"]
