"""``srez attach --plain``: a run's live dialog as plain text, safe for any terminal.

:func:`render_frame` is pure: one stream frame in, lines of text out, every untrusted string
(what the agent wrote, tool output, names, error messages) passed through
:func:`srez_client.sanitize.sanitize`, so no control sequence from a run reaches the terminal raw
(SECURITY.md A8). :func:`attach_plain` follows the stream until the run ends.
"""

from __future__ import annotations

import asyncio
from typing import Final, TextIO

import orjson

from srez_client.daemon_client.api import DaemonClient
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
from srez_daemon.protocol.api import (
    DialogFrame,
    DiffFrame,
    GradeFrame,
    HeartbeatFrame,
    PhaseFrame,
    StreamFrame,
)

PROMPT_LINES: Final = 6
"""Lines of the task prompt shown (it is long; the whole of it is in the dialog file)."""
RESULT_CHARS: Final = 1500
"""Characters of a tool result shown."""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit} more chars]"


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in sanitize(text).splitlines() or [""])


def render_entry(entry: DialogEntry) -> str:
    """One dialog entry as plain, sanitised text (one or more lines)."""
    match entry:
        case SessionStarted():
            who = sanitize_line(f"{entry.agent} ({entry.model}) on {entry.task_id}")
            return f"[{entry.seq}] session started: {who}, run {sanitize_line(entry.run_id)}"
        case TaskPrompt():
            lines = entry.text.splitlines()
            more = (
                f"\n    ... ({len(lines) - PROMPT_LINES} more lines)"
                if len(lines) > PROMPT_LINES
                else ""
            )
            return (
                f"[{entry.seq}] task prompt:\n{_indent(chr(10).join(lines[:PROMPT_LINES]))}{more}"
            )
        case Assistant():
            return f"[{entry.seq}] assistant:\n{_indent(entry.text)}"
        case Thinking():
            return f"[{entry.seq}] thinking:\n{_indent(entry.text)}"
        case ToolCall():
            args = orjson.dumps(entry.args, option=orjson.OPT_SORT_KEYS).decode()
            return f"[{entry.seq}] -> {sanitize_line(entry.name)} {sanitize_line(_clip(args, 300))}"
        case ToolResult():
            head = f"[{entry.seq}] <- {entry.status} (step {entry.step}, {entry.steps_left} left)"
            return f"{head}\n{_indent(_clip(entry.result, RESULT_CHARS))}"
        case ProviderError():
            retry = f", retry in {entry.retry_in_s:g} s" if entry.retry_in_s is not None else ""
            return f"[{entry.seq}] provider error ({entry.kind}{retry}): {sanitize_line(entry.message)}"
        case Usage():
            cost = f", ${entry.cost_usd:.4f}" if entry.cost_usd is not None else ""
            return f"[{entry.seq}] usage: {entry.tokens.input} in / {entry.tokens.output} out{cost}"
        case SessionCompleted() | SessionFailed() | SessionTimedOut():
            what = entry.type.removeprefix("session_").replace("_", " ")
            error = f": {sanitize_line(entry.error)}" if entry.error else ""
            return f"[{entry.seq}] session {what} after {entry.turns} turns, {entry.duration_s:.1f} s{error}"
        case NotesDropped():
            return (
                f"[{entry.seq}] notes dropped from here on: the {entry.reason} cap ({entry.limit})"
                f" was reached after {entry.notes_kept} notes"
            )
        case ErrorEntry():
            return f"[line {entry.line}] unreadable entry ({entry.kind}): {sanitize_line(entry.message)}"


def render_frame(frame: StreamFrame) -> str | None:
    """A stream frame as plain text, or None for frames not shown (heartbeats)."""
    match frame:
        case DialogFrame():
            return render_entry(frame.entry)
        case PhaseFrame():
            return f"== phase: {frame.phase}"
        case DiffFrame():
            names = ", ".join(sanitize_line(f"{f.status} {f.path}") for f in frame.files)
            return f"== changed files: {names or 'none'}"
        case GradeFrame():
            return (
                f"== grade: reward {frame.reward:.3f}, resolved {'yes' if frame.resolved else 'no'}, "
                f"passed {'yes' if frame.passed else 'no'}"
            )
        case HeartbeatFrame():
            return None


async def attach_plain(
    client: DaemonClient, out: TextIO, *, offset: int = 0, stop: asyncio.Event | None = None
) -> int:
    """Print the run's dialog from ``offset`` until the run ends (or ``stop`` is set).

    Returns:
        How many dialog entries were printed.
    """
    shown = 0
    async for frame in client.stream(offset, stop=stop):
        text = render_frame(frame)
        if text is None:
            continue
        out.write(text + "\n")
        out.flush()
        shown += isinstance(frame, DialogFrame)
    return shown
