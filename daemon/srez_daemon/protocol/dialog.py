"""The dialog protocol: the entries of a run's ``archive/dialog.jsonl`` (docs/design.md §6).

One JSON object per line, written only by the process that hosts the simulator (the daemon, or the
inline backend), fsynced per entry. Every entry carries ``seq`` (0, 1, 2, ... in file order),
``ts`` (UTC ISO-8601 ending in ``Z``) and ``type``, the discriminator of :data:`DialogEntry`.

Readers must survive anything in the file. :func:`parse_line` never raises: a line that is too
long, not UTF-8, not JSON, of an unknown type or off the schema becomes an :class:`ErrorEntry`
(``type == "error"``) that names the line number, the byte offset and what was wrong. Error entries
are made by readers only; a writer never writes one.

Compatibility: the models forbid unknown fields, so any change to an entry (even an added optional
field) bumps :data:`PROTOCOL_VERSION`, which :class:`SessionStarted` records.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from srez_core.field_docs import field_docstrings
from srez_core.wire_version import PROTOCOL_VERSION as PROTOCOL_VERSION  # noqa: E402

"""Version of the dialog protocol; bumped on any change to an entry's fields."""

MAX_LINE_BYTES: Final = 1 << 20
"""Longest line a reader parses (1 MiB); a longer one becomes an ``oversized_line`` error entry."""

EPOCH_TS: Final = "1970-01-01T00:00:00Z"
"""The ``ts`` of an error entry whose line carried no usable timestamp."""

_TS_PATTERN: Final = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$"
_TS_RE: Final = re.compile(_TS_PATTERN)
_MESSAGE_MAX: Final = 200

UtcTimestamp = Annotated[str, Field(pattern=_TS_PATTERN)]
"""A UTC time in ISO-8601 with a ``Z`` suffix, e.g. ``2025-03-14T10:03:00.125Z``."""


class _Entry(BaseModel):
    """Fields every dialog entry has."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra=field_docstrings,
        json_schema_serialization_defaults_required=True,
    )

    seq: int
    """Position of the entry in the file, from 0; -1 on reader-made error entries."""
    ts: UtcTimestamp
    """When the entry was written (UTC, ISO-8601, ``Z`` suffix)."""


class TokenCount(BaseModel):
    """Tokens of one model call, or running totals."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra=field_docstrings,
        json_schema_serialization_defaults_required=True,
    )

    input: int = Field(default=0, ge=0)
    """Prompt tokens."""
    output: int = Field(default=0, ge=0)
    """Completion tokens (reasoning included)."""


class SessionStarted(_Entry):
    """The first entry of every dialog: who runs which task."""

    type: Literal["session_started"] = "session_started"
    agent: str
    """Agent name (``scripted``, ``heuristic``, ``random``, ``replay``, ``llm`` ...)."""
    model: str
    """Model slug as given (``none`` for the baselines)."""
    task_id: str
    """Task id, e.g. ``sre-007``."""
    run_id: str
    """Run id, ``YYYYMMDDTHHMMSSZ-<8 hex>``."""
    protocol_version: int = PROTOCOL_VERSION
    """Version of this protocol the writer speaks."""


class TaskPrompt(_Entry):
    """The full prompt the agent received at reset (viewers shorten it)."""

    type: Literal["task_prompt"] = "task_prompt"
    text: str
    """The prompt as one string: preamble, brief, alerts, services, budget, tools, glossary."""


class Assistant(_Entry):
    """Text the model wrote in one turn."""

    type: Literal["assistant"] = "assistant"
    text: str
    """The reply, as Markdown."""
    tokens: TokenCount | None = None
    """Tokens of the call that produced this reply, when the provider reported them."""
    finish_reason: str | None = Field(default=None, max_length=32)
    """Set only when the model did not end the reply itself: ``length`` when the completion cap
    (``SREZ_LLM_MAX_TOKENS``) cut it, which is why such a reply may not parse."""


class Thinking(_Entry):
    """Reasoning text the model exposed in one turn."""

    type: Literal["thinking"] = "thinking"
    text: str
    """The reasoning text."""


class ToolCall(_Entry):
    """A tool call, written before it executes."""

    type: Literal["tool_call"] = "tool_call"
    call_id: str
    """Id that pairs this call with its :class:`ToolResult`."""
    name: str
    """Tool name as the agent sent it (it may be unknown; the result then says so)."""
    args: dict[str, JsonValue]
    """Arguments as the agent sent them."""
    status: Literal["running"] = "running"
    """Always ``running``: the outcome is in the matching ``tool_result``."""


class ToolResult(_Entry):
    """The outcome of a tool call."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    """Id of the :class:`ToolCall` this answers."""
    status: Literal["success", "error"]
    """``error`` when the simulator rejected the call (it still used a step)."""
    result: str
    """What the agent saw: the tool's output, or the error object as JSON."""
    duration_ms: float = Field(ge=0)
    """Time the simulator took to execute the call."""
    step: int = Field(ge=0)
    """Steps used after this call."""
    steps_left: int = Field(ge=0)
    """Steps left in the budget after this call."""


class ProviderError(_Entry):
    """A failed call to the model provider (the run goes on, retrying or cooling down)."""

    type: Literal["provider_error"] = "provider_error"
    kind: Literal["rate_limit", "timeout", "server", "auth", "model_limit", "other"]
    """Class of the failure."""
    message: str
    """The provider's message, one line."""
    retry_in_s: float | None = Field(default=None, ge=0)
    """Seconds until the next attempt, or None when no retry follows."""
    cooldown: bool = False
    """Whether the run is paused for a provider cooldown (time that does not count against it)."""


class Usage(_Entry):
    """Running totals of tokens and cost."""

    type: Literal["usage"] = "usage"
    tokens: TokenCount
    """Tokens used so far in this run."""
    cost_usd: float | None = Field(default=None, ge=0)
    """Cost so far in US dollars, when the price of the model is known."""


class NotesDropped(_Entry):
    """Written by the daemon, once, when the agent's notes reach a per-run cap: from this entry
    on, the agent's ``assistant``, ``thinking``, ``provider_error`` and ``usage`` notes are
    refused and not recorded. The tool record (``tool_call`` / ``tool_result``) goes on."""

    type: Literal["notes_dropped"] = "notes_dropped"
    reason: Literal["bytes", "count"]
    """Which cap was reached: the notes' total size, or their number."""
    limit: int = Field(ge=0)
    """The cap (bytes of dialog lines, or notes)."""
    notes_kept: int = Field(ge=0)
    """Notes recorded before this entry."""
    bytes_kept: int = Field(ge=0)
    """Bytes of dialog lines those notes took."""


class _SessionEnd(_Entry):
    """Fields shared by the three entries that end a session."""

    turns: int = Field(ge=0)
    """Agent turns taken (calls to the agent)."""
    duration_s: float = Field(ge=0)
    """Wall time of the agent phase."""
    tokens_total: int | None = Field(default=None, ge=0)
    """Tokens used in the run (input + output), or None for agents without a model."""
    cost_usd: float | None = Field(default=None, ge=0)
    """Cost of the run in US dollars, when known."""
    error: str | None = None
    """What went wrong, one line; None when nothing did."""


class SessionCompleted(_SessionEnd):
    """The agent phase ended normally (submit, or the step budget ran out)."""

    type: Literal["session_completed"] = "session_completed"


class SessionFailed(_SessionEnd):
    """The agent phase ended on an error (the agent crashed or exited); the run is still graded."""

    type: Literal["session_failed"] = "session_failed"


class SessionTimedOut(_SessionEnd):
    """The agent phase hit its time limit; the run is still graded."""

    type: Literal["session_timed_out"] = "session_timed_out"


ErrorKind = Literal[
    "oversized_line",
    "invalid_utf8",
    "invalid_json",
    "unknown_type",
    "schema",
    "truncated_tail",
    "file_reset",
]
"""Why a reader could not turn a line into an entry. ``file_reset`` is for live tailers: the file
shrank or was replaced, and reading starts again from offset 0."""


class ErrorEntry(_Entry):
    """Made by a reader in place of a line it could not parse; never written to a dialog file."""

    type: Literal["error"] = "error"
    kind: ErrorKind
    """What was wrong with the line."""
    message: str
    """A short description, one line."""
    line: int = Field(ge=1)
    """Line number in the file, from 1."""
    offset: int = Field(ge=0)
    """Byte offset of the start of the line in the file."""
    bytes: int = Field(ge=0)
    """Length of the line in bytes, without its newline."""


DialogEntry = Annotated[
    SessionStarted
    | TaskPrompt
    | Assistant
    | Thinking
    | ToolCall
    | ToolResult
    | ProviderError
    | Usage
    | NotesDropped
    | SessionCompleted
    | SessionFailed
    | SessionTimedOut
    | ErrorEntry,
    Field(discriminator="type"),
]
"""Any dialog entry, discriminated on ``type``."""

DIALOG_ADAPTER: Final[TypeAdapter[DialogEntry]] = TypeAdapter(DialogEntry)
"""Validates and dumps :data:`DialogEntry` values."""

ENTRY_TYPES: Final[frozenset[str]] = frozenset(
    model.model_fields["type"].default
    for model in (
        SessionStarted,
        TaskPrompt,
        Assistant,
        Thinking,
        ToolCall,
        ToolResult,
        ProviderError,
        Usage,
        NotesDropped,
        SessionCompleted,
        SessionFailed,
        SessionTimedOut,
        ErrorEntry,
    )
)
"""Every value of ``type`` the protocol knows."""


def encode_entry(entry: DialogEntry) -> bytes:
    """Encode an entry as one JSON line.

    Args:
        entry: The entry; its fields are written in declaration order (``seq``, ``ts``, ``type``
            first).

    Returns:
        The UTF-8 JSON object followed by ``\\n``.
    """
    return orjson.dumps(entry.model_dump(mode="json"), option=orjson.OPT_APPEND_NEWLINE)


def parse_line(
    raw: bytes, *, line_no: int, offset: int, max_bytes: int = MAX_LINE_BYTES
) -> DialogEntry:
    """Parse one line of a dialog file. Never raises.

    Args:
        raw: The line's bytes, with or without its trailing ``\\n`` (or ``\\r\\n``).
        line_no: Line number in the file, from 1.
        offset: Byte offset of the line's first byte in the file.
        max_bytes: Lines longer than this are not decoded at all.

    Returns:
        The entry, or an :class:`ErrorEntry` saying why the line is not one.
    """
    line_no = max(1, line_no)
    offset = max(0, offset)
    body = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1] if raw.endswith(b"\n") else raw
    size = len(body)

    def error(kind: ErrorKind, message: str, seq: int = -1, ts: str = EPOCH_TS) -> ErrorEntry:
        if len(message) > _MESSAGE_MAX:
            message = message[: _MESSAGE_MAX - 3] + "..."
        return ErrorEntry(
            seq=seq, ts=ts, kind=kind, message=message, line=line_no, offset=offset, bytes=size
        )

    if size > max_bytes:
        return error("oversized_line", f"line of {size} bytes exceeds the {max_bytes}-byte limit")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as e:
        return error("invalid_utf8", f"invalid UTF-8 at byte {e.start} of the line")
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        return error("invalid_json", f"invalid JSON: {e}")
    if not isinstance(obj, dict):
        return error("schema", f"expected a JSON object, got {type(obj).__name__}")
    seq = obj.get("seq")
    ts = obj.get("ts")
    salvage_seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else -1
    salvage_ts = ts if isinstance(ts, str) and _TS_RE.match(ts) else EPOCH_TS
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in ENTRY_TYPES:
        shown = repr(kind)[:40] if kind is not None else "missing"
        return error("unknown_type", f"unknown entry type {shown}", salvage_seq, salvage_ts)
    try:
        return DIALOG_ADAPTER.validate_python(obj)
    except ValidationError as e:
        return error("schema", _summarise(e), salvage_seq, salvage_ts)


def iter_dialog(data: bytes, *, final: bool = True) -> Iterator[DialogEntry]:
    """Parse a whole dialog file held in memory. Never raises.

    Args:
        data: The file's bytes from offset 0.
        final: Whether the file is complete (the run has stopped). If so, a last line without its
            newline is parsed, and becomes a ``truncated_tail`` error when it is not a valid
            entry; if not, that line is still being written and is skipped.

    Yields:
        One entry per line, in file order; empty lines are skipped.
    """
    offset = 0
    line_no = 0
    while offset < len(data):
        end = data.find(b"\n", offset)
        line_no += 1
        if end < 0:
            if not final:
                return
            entry = parse_line(data[offset:], line_no=line_no, offset=offset)
            if isinstance(entry, ErrorEntry):
                msg = f"torn last line (no newline): {entry.message}"
                entry = entry.model_copy(update={"kind": "truncated_tail", "message": msg})
            yield entry
            return
        raw = data[offset : end + 1]
        if raw.strip():
            yield parse_line(raw, line_no=line_no, offset=offset)
        offset = end + 1


def dialog_json_schema() -> dict[str, JsonValue]:
    """The JSON Schema of one dialog line (what ``srez schema dialog`` prints).

    Returns:
        A JSON Schema (draft 2020-12) whose root is a ``oneOf`` discriminated on ``type``.
    """
    schema: dict[str, JsonValue] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "SRE-Zero dialog entry",
        "description": (
            f"One line of archive/dialog.jsonl, protocol version {PROTOCOL_VERSION}. "
            "Entries of type 'error' are made by readers for lines they cannot parse."
        ),
    }
    schema.update(DIALOG_ADAPTER.json_schema(mode="serialization"))
    return schema


def _summarise(e: ValidationError) -> str:
    """One line naming the first schema error and how many more there are."""
    errors = e.errors(include_url=False, include_input=False)
    first = errors[0]
    loc = ".".join(str(part) for part in first["loc"]) or "(entry)"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{loc}: {first['msg']}{more}"
