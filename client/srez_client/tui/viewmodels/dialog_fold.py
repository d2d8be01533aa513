"""The dialog as a reader wants it: entries folded into items, built incrementally.

A run's ``dialog.jsonl`` is a flat list of entries; a person reads a tool call and its result as
one thing, a long prompt as a heading, reasoning as something to open when curious. :class:`DialogFold`
turns entries into :class:`FoldItem` values one at a time (``add``), so a live run costs O(1)
per entry and a finished run of 10,000 entries folds in one pass; widgets render items lazily.

Every string that came from the run is sanitised here, once (SECURITY.md A8), so widgets only
ever see safe text. Usage entries are running totals: they update :attr:`DialogFold.usage` and
do not add items.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal

import orjson

from srez_client.sanitize import sanitize, sanitize_line
from srez_daemon.protocol import (
    Assistant,
    DialogEntry,
    ErrorEntry,
    NotesDropped,
    ProviderError,
    SessionCompleted,
    SessionFailed,
    SessionStarted,
    SessionTimedOut,
    TaskPrompt,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
)

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
Footer = Literal["waiting", "live", "complete"]


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

    def add_all(self, entries: Iterable[DialogEntry]) -> None:
        """Fold many entries (a finished run's whole file)."""
        for entry in entries:
            self.add(entry)

    def add(self, entry: DialogEntry) -> int | None:
        """Fold one entry; the index of the item added or updated, or None (usage)."""
        self.last_seq = max(self.last_seq, entry.seq)
        if isinstance(entry, Usage):
            self.usage = UsageTotals(entry.tokens.input, entry.tokens.output, entry.cost_usd)
            return None
        if isinstance(entry, ToolResult):
            index = self._calls.pop(entry.call_id, None)
            if index is not None:
                self._complete(self.items[index], entry)
                return index
        item = _item_for(entry)
        if isinstance(entry, ToolCall):
            self._calls[entry.call_id] = len(self.items)
        if isinstance(entry, SessionCompleted | SessionFailed | SessionTimedOut):
            self.ended = True
        self.items.append(item)
        return len(self.items) - 1

    @staticmethod
    def _complete(item: FoldItem, result: ToolResult) -> None:
        item.status = result.status
        item.body = sanitize(result.result)
        item.seq = result.seq
        item.meta = f"{result.duration_ms:.0f} ms · step {result.step}, {result.steps_left} left"
        item.version += 1

    def footer(self, *, live: bool) -> tuple[Footer, str]:
        """The dialog pane's footer: state and its text with the latest entry number."""
        latest = f" · entry #{self.last_seq}" if self.last_seq >= 0 else ""
        if self.ended or not live:
            return "complete", f"Session complete{latest}"
        if not self.items:
            return "waiting", "Waiting for agent…"
        return "live", f"Live{latest}"


def _tokens(entry: Assistant) -> str:
    if entry.tokens is None:
        return ""
    return f"{entry.tokens.input} in / {entry.tokens.output} out tokens"


def _args(args: object) -> str:
    text = orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
    text = text if len(text) <= ARGS_CHARS else f"{text[:ARGS_CHARS]}…"
    return sanitize_line(text)


def _end_meta(entry: SessionCompleted | SessionFailed | SessionTimedOut) -> str:
    parts = [f"{entry.turns} turns", f"{entry.duration_s:.1f} s"]
    if entry.tokens_total is not None:
        parts.append(f"{entry.tokens_total} tokens")
    if entry.cost_usd is not None:
        parts.append(f"${entry.cost_usd:.4f}")
    return ", ".join(parts)


def _item_for(entry: DialogEntry) -> FoldItem:
    """The item an entry starts (a lone tool result, whose call is missing, stands alone)."""
    match entry:
        case SessionStarted():
            who = sanitize_line(f"{entry.agent} · {entry.model} · {entry.task_id}")
            return FoldItem("session_started", entry.seq, f"Session started: {who}")
        case TaskPrompt():
            return FoldItem(
                "task_prompt", entry.seq, "Task prompt", sanitize(entry.text), limit=PROMPT_CHARS
            )
        case Assistant():
            return FoldItem(
                "assistant", entry.seq, "Assistant", sanitize(entry.text), meta=_tokens(entry)
            )
        case Thinking():
            body = sanitize(entry.text)
            return FoldItem("thinking", entry.seq, f"Thinking ({len(body)} chars)", body, limit=0)
        case ToolCall():
            title = f"Tool call: {sanitize_line(entry.name)} {_args(entry.args)}"
            return FoldItem("tool", entry.seq, title, status="running", limit=RESULT_CHARS)
        case ToolResult():
            item = FoldItem("tool", entry.seq, "Tool result (call not seen)", limit=RESULT_CHARS)
            DialogFold._complete(item, entry)
            return item
        case ProviderError():
            retry = f" · retry in {entry.retry_in_s:g} s" if entry.retry_in_s is not None else ""
            cool = " · cooldown (not counted against the time limit)" if entry.cooldown else ""
            title = f"Provider error ({entry.kind}){retry}{cool}"
            return FoldItem(
                "provider_error", entry.seq, title, sanitize(entry.message), status="error"
            )
        case SessionCompleted() | SessionFailed() | SessionTimedOut():
            status = entry.type.removeprefix("session_").replace("_", " ")
            body = sanitize(entry.error) if entry.error else ""
            title = f"Session {status}"
            return FoldItem(
                "session_end", entry.seq, title, body, status=status, meta=_end_meta(entry)
            )
        case NotesDropped():
            title = f"Notes dropped from here on ({entry.reason} cap {entry.limit} reached)"
            body = f"{entry.notes_kept} notes ({entry.bytes_kept} bytes) were recorded before."
            return FoldItem("error", entry.seq, title, body, status="error")
        case ErrorEntry():
            title = f"Unreadable line {entry.line} ({entry.kind})"
            return FoldItem("error", entry.seq, title, sanitize(entry.message), status="error")
        case Usage():  # pragma: no cover - handled by DialogFold.add
            return FoldItem("error", entry.seq, "usage")
