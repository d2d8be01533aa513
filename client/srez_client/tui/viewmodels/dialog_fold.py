"""The dialog as a reader wants it: entries folded into items, built incrementally.

A run's ``dialog.jsonl`` is a flat list of entries; a person reads a tool call and its result as
one thing, a long prompt as a heading, reasoning as something to open when curious. :class:`DialogFold`
turns entries into :class:`FoldItem` values one at a time (``add``), so a live run costs O(1)
per entry and a finished run of 10,000 entries folds in one pass; widgets render items lazily.

Every string that came from the run is sanitised here, once (docs/security.md A8), so widgets only
ever see safe text. Usage entries are running totals: they update :attr:`DialogFold.usage` and
do not add items.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal

from pydantic import JsonValue

from srez_client.dialog_entries import EntryVisitor, SessionEnd, args_json, session_outcome
from srez_client.sanitize import sanitize, sanitize_line
from srez_daemon.protocol import dialog

PROMPT_CHARS: Final = 300
"""Characters of the task prompt shown until "show more"."""
RESULT_CHARS: Final = 1000
"""Characters of a tool result shown until expanded."""
ARGS_CHARS: Final = 200
"""Characters of a tool call's arguments in its title line."""

ItemKind = Literal[
    "session_started",
    "task_prompt",
    "assistant",
    "thinking",
    "tool",
    "provider_error",
    "session_end",
    "error",
]
Footer = Literal["loading", "waiting", "live", "complete"]


@dataclass(slots=True)
class FoldItem:
    """One thing the dialog pane shows. ``body`` is the whole (sanitised) text; widgets show
    :meth:`shown_body`, which is cut until the item is expanded."""

    kind: ItemKind
    seq: int
    title: str
    body: str = ""
    status: str = ""
    """``running``/``success``/``error`` for tools; ``completed``/``failed``/``timed out``."""
    meta: str = ""
    """A short right-hand note: token counts, duration."""
    expanded: bool = False
    limit: int | None = None
    """Characters shown while collapsed (None: all); thinking is hidden entirely (0)."""
    version: int = 0
    """Bumped on every change, so a widget cache knows when to rebuild."""

    @property
    def can_expand(self) -> bool:
        """Whether toggling shows more (or less)."""
        return self.limit is not None and len(self.body) > self.limit

    def shown_body(self) -> str:
        """The body as the item shows it now."""
        if self.expanded or self.limit is None or len(self.body) <= self.limit:
            return self.body
        if self.limit == 0:
            return ""
        hidden = len(self.body) - self.limit
        return f"{self.body[: self.limit]}… [{hidden} more chars: show more]"

    def toggle(self) -> bool:
        """Open or close the item; returns whether anything changed."""
        if not self.can_expand:
            return False
        self.expanded = not self.expanded
        self.version += 1
        return True


@dataclass(slots=True)
class UsageTotals:
    """Running token and cost totals (from ``usage`` entries)."""

    input: int = 0
    output: int = 0
    cost_usd: float | None = None


@dataclass(slots=True)
class DialogFold:
    """Entries in, items out. :meth:`add` returns the index of the item it added or changed."""

    items: list[FoldItem] = field(default_factory=list)
    usage: UsageTotals = field(default_factory=UsageTotals)
    last_seq: int = -1
    ended: bool = False
    """A session end entry was seen."""
    _calls: dict[str, int] = field(default_factory=dict)

    def add_all(self, entries: Iterable[dialog.DialogEntry]) -> None:
        """Fold many entries (a finished run's whole file)."""
        for entry in entries:
            self.add(entry)

    def add(self, entry: dialog.DialogEntry) -> int | None:
        """Fold one entry; the index of the item added or updated, or None (usage)."""
        self.last_seq = max(self.last_seq, entry.seq)
        if isinstance(entry, dialog.Usage):
            self.usage = UsageTotals(entry.tokens.input, entry.tokens.output, entry.cost_usd)
            return None
        if isinstance(entry, dialog.ToolResult):
            index = self._calls.pop(entry.call_id, None)
            if index is not None:
                self._complete(self.items[index], entry)
                return index
        item = _FIRST_ITEM.visit(entry)
        if isinstance(entry, dialog.ToolCall):
            self._calls[entry.call_id] = len(self.items)
        if isinstance(entry, SessionEnd):
            self.ended = True
        self.items.append(item)
        return len(self.items) - 1

    @staticmethod
    def _complete(item: FoldItem, result: dialog.ToolResult) -> None:
        item.status = result.status
        item.body = sanitize(result.result)
        item.seq = result.seq
        item.meta = f"{result.duration_ms:.0f} ms · step {result.step}, {result.steps_left} left"
        item.version += 1

    def footer(self, *, live: bool, loaded: bool = True) -> tuple[Footer, str]:
        """The dialog pane's footer: state and its text with the latest entry number. A run
        that is not live is complete only once its dialog is ``loaded`` (read to its end):
        until then its items are what was read so far."""
        latest = f" · entry #{self.last_seq}" if self.last_seq >= 0 else ""
        if not live and not loaded and not self.ended:
            return "loading", f"Loading the dialog…{latest}"
        if self.ended or not live:
            return "complete", f"Session complete{latest}"
        if not self.items:
            return "waiting", "Waiting for agent…"
        return "live", f"Live{latest}"


def _tokens(entry: dialog.Assistant) -> str:
    if entry.tokens is None:
        return ""
    return f"{entry.tokens.input} in / {entry.tokens.output} out tokens"


def _args(args: dict[str, JsonValue]) -> str:
    text = args_json(args)
    text = text if len(text) <= ARGS_CHARS else f"{text[:ARGS_CHARS]}…"
    return sanitize_line(text)


def _end_meta(entry: SessionEnd) -> str:
    parts = [f"{entry.turns} turns", f"{entry.duration_s:.1f} s"]
    if entry.tokens_total is not None:
        parts.append(f"{entry.tokens_total} tokens")
    if entry.cost_usd is not None:
        parts.append(f"${entry.cost_usd:.4f}")
    return ", ".join(parts)


class _FirstItem(EntryVisitor[FoldItem]):
    """The item an entry starts (a lone tool result, whose call is missing, stands alone)."""

    def session_started(self, entry: dialog.SessionStarted) -> FoldItem:
        who = sanitize_line(f"{entry.agent} · {entry.model} · {entry.task_id}")
        return FoldItem("session_started", entry.seq, f"Session started: {who}")

    def task_prompt(self, entry: dialog.TaskPrompt) -> FoldItem:
        body = sanitize(entry.text)
        return FoldItem("task_prompt", entry.seq, "Task prompt", body, limit=PROMPT_CHARS)

    def assistant(self, entry: dialog.Assistant) -> FoldItem:
        body = sanitize(entry.text)
        return FoldItem("assistant", entry.seq, "Assistant", body, meta=_tokens(entry))

    def thinking(self, entry: dialog.Thinking) -> FoldItem:
        body = sanitize(entry.text)
        return FoldItem("thinking", entry.seq, f"Thinking ({len(body)} chars)", body, limit=0)

    def tool_call(self, entry: dialog.ToolCall) -> FoldItem:
        title = f"Tool call: {sanitize_line(entry.name)} {_args(entry.args)}"
        return FoldItem("tool", entry.seq, title, status="running", limit=RESULT_CHARS)

    def tool_result(self, entry: dialog.ToolResult) -> FoldItem:
        item = FoldItem("tool", entry.seq, "Tool result (call not seen)", limit=RESULT_CHARS)
        DialogFold._complete(item, entry)
        return item

    def provider_error(self, entry: dialog.ProviderError) -> FoldItem:
        retry = f" · retry in {entry.retry_in_s:g} s" if entry.retry_in_s is not None else ""
        cool = " · cooldown (not counted against the time limit)" if entry.cooldown else ""
        title = f"Provider error ({entry.kind}){retry}{cool}"
        body = sanitize(entry.message)
        return FoldItem("provider_error", entry.seq, title, body, status="error")

    def usage(self, entry: dialog.Usage) -> FoldItem:  # pragma: no cover - DialogFold.add
        return FoldItem("error", entry.seq, "usage")

    def notes_dropped(self, entry: dialog.NotesDropped) -> FoldItem:
        title = f"Notes dropped from here on ({entry.reason} cap {entry.limit} reached)"
        body = f"{entry.notes_kept} notes ({entry.bytes_kept} bytes) were recorded before."
        return FoldItem("error", entry.seq, title, body, status="error")

    def session_ended(self, entry: SessionEnd) -> FoldItem:
        status = session_outcome(entry)
        body = sanitize(entry.error) if entry.error else ""
        meta = _end_meta(entry)
        return FoldItem("session_end", entry.seq, f"Session {status}", body, status, meta)

    def unreadable(self, entry: dialog.ErrorEntry) -> FoldItem:
        title = f"Unreadable line {entry.line} ({entry.kind})"
        return FoldItem("error", entry.seq, title, sanitize(entry.message), status="error")


_FIRST_ITEM: Final = _FirstItem()
