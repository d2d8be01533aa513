"""The AI tab: ready prompts (compare with the reference, review, look for problems), a free
question, and the answer as lightly rendered Markdown, or why there is none (no model, missing
key, provider down, cap reached). The call runs host-side in a worker thread; its cost goes to
the tab's own cap, never to the run."""

from __future__ import annotations

import os
from typing import Any

import urwid

from srez_client.sanitize import sanitize
from srez_client.tui.explain import ExplainSettings, ask
from srez_client.tui.explain_context import gather_context
from srez_client.tui.explain_spend import SpendLedger
from srez_client.tui.shell import Shell
from srez_client.tui.viewer_feed import RunFeed
from srez_client.tui.viewmodels import markdown
from srez_client.tui.viewmodels.explain_prompt import build_messages
from srez_client.tui.widgets.sizing import Size

READY = (
    ("compare", "Compare with the reference"),
    ("review", "Review the changes"),
    ("problems", "Look for problems"),
)


def answer_markup(text: str) -> list[Any]:
    """Markdown answer as urwid markup (sanitised first: a model's answer is untrusted too)."""
    out: list[Any] = []
    for i, line in enumerate(markdown.render(sanitize(text))):
        if i:
            out.append("\n")
        out.extend(line)
    return out or [""]


class ExplainPanel(urwid.WidgetWrap[urwid.Widget]):
    """The tab's widget."""

    def __init__(
        self, shell: Shell, feed: RunFeed, settings: ExplainSettings | None = None
    ) -> None:
        self.shell = shell
        self.feed = feed
        self.settings = settings or ExplainSettings.from_env(os.environ, shell.state_dir)
        self.busy = False
        buttons = [
            urwid.AttrMap(
                urwid.Button(title, on_press=self._ready, user_data=name), "tab", "tab_on"
            )
            for name, title in READY
        ]
        self.question = urwid.Edit(("title", "Ask: "))
        self.answer = urwid.Text(("dim", self._intro()))
        self.walker = urwid.SimpleFocusListWalker([self.answer])
        body = urwid.Pile(
            [
                ("pack", urwid.Columns([("pack", b) for b in buttons], dividechars=1)),
                ("pack", self.question),
                ("pack", urwid.Divider("─")),
                ("weight", 1, urwid.ListBox(self.walker)),
            ]
        )
        super().__init__(body)

    def _intro(self) -> str:
        s = self.settings
        model = s.model or "none (set SREZ_EXPLAIN_MODEL)"
        spent = SpendLedger(s.state_dir, s.cap_usd).spent()
        return f"Model: {model}. Spent ${spent:.4f} of the ${s.cap_usd:.2f} cap (not counted as the run's)."

    def _ready(self, _button: urwid.Button, name: str) -> None:
        self.submit(name)

    def submit(self, prompt: str) -> bool:
        """Ask ``prompt`` (a ready prompt's name or free text); False if one is in flight."""
        if self.busy or not prompt.strip():
            return False
        self.busy = True
        self.answer.set_text(("dim", "Thinking… (reading the run, asking the model)"))
        self.shell.spawn(self._ask(prompt), "explain")
        return True

    async def _ask(self, prompt: str) -> None:
        try:
            ctx = await gather_context(self.feed.source)
            answer = await ask(self.settings, build_messages(prompt, ctx))
            if answer.ok:
                cost = f"\n\n(cost ${answer.cost_usd:.4f}; {self._intro()})"
                self.answer.set_text(answer_markup(answer.text + cost))
            else:
                self.answer.set_text(
                    [("error", "The model could not answer: "), sanitize(answer.text)]
                )
        finally:
            self.busy = False
            self.shell.redraw()

    def keypress(self, size: Size, key: str) -> str | None:
        if key == "enter" and self.question.edit_text.strip():
            self.submit(self.question.edit_text)
            self.question.set_edit_text("")
            return None
        result: str | None = super().keypress(size, key)
        return result
