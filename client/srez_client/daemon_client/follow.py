"""``srez attach --plain``: a run's live dialog as plain text, safe for any terminal.

:func:`render_frame` is pure: one stream frame in, lines of text out, every untrusted string
(what the agent wrote, tool output, names, error messages) passed through
:func:`srez_client.sanitize.sanitize`, so no control sequence from a run reaches the terminal raw
(docs/security.md A8). :func:`attach_plain` follows the stream until the run ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Final, TextIO

from srez_client.daemon_client.api import DaemonClient
from srez_client.dialog_entries import EntryVisitor, SessionEnd, args_json, session_outcome
from srez_client.sanitize import sanitize, sanitize_line
from srez_daemon.protocol import RunSummary, dialog, iter_dialog
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


class _PlainEntry(EntryVisitor[str]):
    """One entry as plain, sanitised text: ``[seq]`` then what happened."""

    def session_started(self, entry: dialog.SessionStarted) -> str:
        who = sanitize_line(f"{entry.agent} ({entry.model}) on {entry.task_id}")
        return f"[{entry.seq}] session started: {who}, run {sanitize_line(entry.run_id)}"

    def task_prompt(self, entry: dialog.TaskPrompt) -> str:
        lines = entry.text.splitlines()
        more = (
            f"\n    ... ({len(lines) - PROMPT_LINES} more lines)"
            if len(lines) > PROMPT_LINES
            else ""
        )
        return f"[{entry.seq}] task prompt:\n{_indent(chr(10).join(lines[:PROMPT_LINES]))}{more}"

    def assistant(self, entry: dialog.Assistant) -> str:
        return f"[{entry.seq}] assistant:\n{_indent(entry.text)}"

    def thinking(self, entry: dialog.Thinking) -> str:
        return f"[{entry.seq}] thinking:\n{_indent(entry.text)}"

    def tool_call(self, entry: dialog.ToolCall) -> str:
        args = sanitize_line(_clip(args_json(entry.args), 300))
        return f"[{entry.seq}] -> {sanitize_line(entry.name)} {args}"

    def tool_result(self, entry: dialog.ToolResult) -> str:
        head = f"[{entry.seq}] <- {entry.status} (step {entry.step}, {entry.steps_left} left)"
        return f"{head}\n{_indent(_clip(entry.result, RESULT_CHARS))}"

    def provider_error(self, entry: dialog.ProviderError) -> str:
        retry = f", retry in {entry.retry_in_s:g} s" if entry.retry_in_s is not None else ""
        return f"[{entry.seq}] provider error ({entry.kind}{retry}): {sanitize_line(entry.message)}"

    def usage(self, entry: dialog.Usage) -> str:
        cost = f", ${entry.cost_usd:.4f}" if entry.cost_usd is not None else ""
        return f"[{entry.seq}] usage: {entry.tokens.input} in / {entry.tokens.output} out{cost}"

    def notes_dropped(self, entry: dialog.NotesDropped) -> str:
        return (
            f"[{entry.seq}] notes dropped from here on: the {entry.reason} cap ({entry.limit})"
            f" was reached after {entry.notes_kept} notes"
        )

    def session_ended(self, entry: SessionEnd) -> str:
        error = f": {sanitize_line(entry.error)}" if entry.error else ""
        took = f"after {entry.turns} turns, {entry.duration_s:.1f} s"
        return f"[{entry.seq}] session {session_outcome(entry)} {took}{error}"

    def unreadable(self, entry: dialog.ErrorEntry) -> str:
        what = f"unreadable entry ({entry.kind}): {sanitize_line(entry.message)}"
        return f"[line {entry.line}] {what}"


_PLAIN_ENTRY: Final = _PlainEntry()


def render_entry(entry: dialog.DialogEntry) -> str:
    """One dialog entry as plain, sanitised text (one or more lines)."""
    return _PLAIN_ENTRY.visit(entry)


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


def render_finished(data: bytes, summary: RunSummary | None) -> Iterator[str]:
    """A finished run as the plain follower would have printed it live: each entry of its
    dialog file (``data``), the end phase, then the grade when ``summary`` has one."""
    for entry in iter_dialog(data, final=True):
        yield render_entry(entry)
    yield "== phase: done"
    if summary is not None and summary.reward is not None:
        resolved, passed = bool(summary.resolved), bool(summary.passed)
        yield (
            render_frame(GradeFrame(reward=summary.reward, resolved=resolved, passed=passed)) or ""
        )


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
