"""The one place that tells a run's dialog entries apart, for everything that shows them.

Four readers turn the entries of :mod:`srez_daemon.protocol.dialog` into something else: the plain
follower (``srez attach --plain``), the run viewer's dialog pane, the AI tab's prompt and the ATIF
export. Each words an entry its own way, so each keeps its own wording; what they share is here:
:class:`EntryVisitor` holds the single dispatch over the protocol's union (one method per kind of
entry, the three session ends folded into :meth:`~EntryVisitor.session_ended`), and the few facts
every reader derives alike (:func:`args_json`, :func:`session_outcome`).

A reader subclasses :class:`EntryVisitor` and calls :meth:`~EntryVisitor.visit`. An entry type
added to the protocol fails loudly: mypy reports the unhandled case in :meth:`~EntryVisitor.visit`,
the visit raises at run time, and the test that visits one entry of every type of the union
fails; a method added here makes every reader that lacks it impossible to instantiate.

Strings reach the readers raw, as the run wrote them: each sanitises for its own medium (a
terminal, a widget, a model's prompt, a JSON file).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Generic, TypeAlias, TypeVar, assert_never

import orjson
from pydantic import JsonValue

from srez_daemon.protocol import dialog

T = TypeVar("T")

SessionEnd: TypeAlias = dialog.SessionCompleted | dialog.SessionFailed | dialog.SessionTimedOut
"""The three entries that end a session (same fields, different outcome)."""


class EntryVisitor(ABC, Generic[T]):
    """Turns each kind of dialog entry into a ``T``; :meth:`visit` picks the method."""

    def visit(self, entry: dialog.DialogEntry) -> T:
        """The method for ``entry``'s type, applied to it."""
        match entry:
            case dialog.SessionStarted():
                return self.session_started(entry)
            case dialog.TaskPrompt():
                return self.task_prompt(entry)
            case dialog.Assistant():
                return self.assistant(entry)
            case dialog.Thinking():
                return self.thinking(entry)
            case dialog.ToolCall():
                return self.tool_call(entry)
            case dialog.ToolResult():
                return self.tool_result(entry)
            case dialog.ProviderError():
                return self.provider_error(entry)
            case dialog.Usage():
                return self.usage(entry)
            case dialog.NotesDropped():
                return self.notes_dropped(entry)
            case dialog.SessionCompleted() | dialog.SessionFailed() | dialog.SessionTimedOut():
                return self.session_ended(entry)
            case dialog.ErrorEntry():
                return self.unreadable(entry)
            case _:
                assert_never(entry)

    @abstractmethod
    def session_started(self, entry: dialog.SessionStarted) -> T:
        """Who runs which task."""

    @abstractmethod
    def task_prompt(self, entry: dialog.TaskPrompt) -> T:
        """The prompt the agent received."""

    @abstractmethod
    def assistant(self, entry: dialog.Assistant) -> T:
        """What the model wrote in one turn."""

    @abstractmethod
    def thinking(self, entry: dialog.Thinking) -> T:
        """Reasoning the model exposed."""

    @abstractmethod
    def tool_call(self, entry: dialog.ToolCall) -> T:
        """A tool call, before it ran."""

    @abstractmethod
    def tool_result(self, entry: dialog.ToolResult) -> T:
        """A tool call's outcome."""

    @abstractmethod
    def provider_error(self, entry: dialog.ProviderError) -> T:
        """A failed call to the model provider."""

    @abstractmethod
    def usage(self, entry: dialog.Usage) -> T:
        """Running totals of tokens and cost."""

    @abstractmethod
    def notes_dropped(self, entry: dialog.NotesDropped) -> T:
        """The agent's notes reached a cap and are no longer recorded."""

    @abstractmethod
    def session_ended(self, entry: SessionEnd) -> T:
        """The agent phase ended (:func:`session_outcome` says how)."""

    @abstractmethod
    def unreadable(self, entry: dialog.ErrorEntry) -> T:
        """A line the reader could not parse."""


def args_json(args: dict[str, JsonValue]) -> str:
    """A tool call's arguments as compact JSON with sorted keys, so the same call reads the same
    wherever it is shown."""
    return orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()


def session_outcome(entry: SessionEnd) -> str:
    """``completed``, ``failed`` or ``timed out``."""
    return entry.type.removeprefix("session_").replace("_", " ")


__all__ = ["EntryVisitor", "SessionEnd", "args_json", "session_outcome"]
