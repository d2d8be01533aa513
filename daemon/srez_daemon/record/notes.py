"""The agent's own notes (``assistant``, ``thinking``, ``provider_error``, ``usage``), checked and
counted against the run's caps before they reach the dialog.

Past a cap a note is refused (:class:`~srez_daemon.errors.NoteRefused`) and one ``notes_dropped``
entry says so, once; tool calls are never capped. Thread-safe: notes may arrive in several threads
at once, and the counting happens under the dialog's lock, in file order.
"""

from __future__ import annotations

import threading
from typing import Final, Literal

from pydantic import ValidationError

from srez_daemon.errors import NoteRefused
from srez_daemon.protocol import Assistant, NotesDropped, ProviderError, Thinking, Usage
from srez_daemon.protocol.api import AgentNote
from srez_daemon.record.folder import NoteLimits
from srez_daemon.record.storage import DialogWriter

Note = Assistant | Thinking | ProviderError | Usage

RESERVED_NOTE_FIELDS: Final = frozenset({"seq", "ts", "type"})
"""Fields the recorder stamps on every entry: a note may not set them."""
_NOTE_MODELS: Final[
    dict[str, type[Assistant] | type[Thinking] | type[ProviderError] | type[Usage]]
] = {
    "assistant": Assistant,
    "thinking": Thinking,
    "provider_error": ProviderError,
    "usage": Usage,
}


class NoteGate:
    """Admits the agent's notes into one dialog while they stay within :class:`NoteLimits`."""

    def __init__(self, limits: NoteLimits) -> None:
        self._limits = limits
        self._kept = 0
        self._bytes = 0
        self._cut: NotesDropped | None = None  # the marker, once a cap was reached
        self._dropped = 0
        self._marker_due = False
        self._lock = threading.Lock()  # the counters; the dialog has its own lock

    @property
    def dropped(self) -> int:
        """Notes refused and not recorded (oversized, or past a cap)."""
        return self._dropped

    def record(self, dialog: DialogWriter, note: AgentNote) -> Note:
        """Writes ``note`` into ``dialog``; returns the entry as written.

        Raises:
            NoteRefused: ``bad_request`` if the fields are not the type's (or set ``seq``,
                ``ts`` or ``type``); ``payload_too_large`` if the note's line is over the
                per-note cap, or the notes reached their byte cap; ``too_many_notes`` once they
                reached their count cap. Nothing of a refused note is recorded.
            RecordError: If the dialog could not be written.
        """
        fields = dict(note.fields)
        reserved = sorted(RESERVED_NOTE_FIELDS & fields.keys())
        if reserved:
            msg = f"fields may not set {', '.join(reserved)}: the daemon stamps them"
            raise NoteRefused(code="bad_request", message=msg)
        model = _NOTE_MODELS[note.type]
        try:
            return dialog.append(lambda seq, ts: model(seq=seq, ts=ts, **fields), check=self._admit)
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            where = ".".join(str(x) for x in first["loc"]) or "fields"
            msg = f"fields.{where}: {first['msg']}"
            raise NoteRefused(code="bad_request", message=msg) from e
        except NoteRefused:
            with self._lock:
                self._dropped += 1
                marker = self._cut if self._marker_due else None
                self._marker_due = False
            if marker is not None:
                dialog.append(lambda seq, ts: marker.model_copy(update={"seq": seq, "ts": ts}))
            raise

    def _admit(self, line: bytes) -> None:
        """Counts a note about to be written, or refuses it (called under the dialog's lock)."""
        limits = self._limits
        with self._lock:
            if self._cut is None:
                reason: Literal["bytes", "count"] | None = None
                if len(line) > limits.max_note_bytes:
                    msg = (
                        f"the note's line is {len(line)} bytes, over the {limits.max_note_bytes}-byte"
                        " cap of one note; it was not recorded (shorten it)"
                    )
                    raise NoteRefused(code="payload_too_large", message=msg)
                if self._kept >= limits.max_count:
                    reason = "count"
                elif self._bytes + len(line) > limits.max_bytes:
                    reason = "bytes"
                if reason is None:
                    self._kept += 1
                    self._bytes += len(line)
                    return
                self._cut = NotesDropped(
                    seq=0,
                    ts="1970-01-01T00:00:00Z",
                    reason=reason,
                    limit=limits.max_count if reason == "count" else limits.max_bytes,
                    notes_kept=self._kept,
                    bytes_kept=self._bytes,
                )
                self._marker_due = True
            cut = self._cut
        if cut.reason == "count":
            msg = (
                f"the run's notes reached their cap of {cut.limit} notes: this and every later"
                " note is dropped (tool calls go on)"
            )
            raise NoteRefused(code="too_many_notes", message=msg)
        msg = (
            f"the run's notes reached their cap of {cut.limit} bytes: this and every later note"
            " is dropped (tool calls go on)"
        )
        raise NoteRefused(code="payload_too_large", message=msg)
