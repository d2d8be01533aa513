"""Cutting a dialog file's bytes into lines, and what each line becomes (docs/security.md A7).

Pure: no file, no clock, no event loop. :class:`LineSplitter` takes the bytes in chunks of any
size and hands back every complete line with its size and digest. A line longer than
:data:`LONGEST` is never held: its bytes are hashed and dropped up to its newline, and it comes
back without them. :func:`line_entry` turns a line into the entry viewers see.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Final, Literal

from srez_daemon.protocol import EPOCH_TS, MAX_LINE_BYTES, DialogEntry, ErrorEntry, parse_line

LONGEST: Final = MAX_LINE_BYTES + 2
"""A line with its ``\\r\\n``; a longer line is not buffered."""
HEAD_BYTES: Final = 256
"""Bytes of a line's start kept to spot an in-place rewrite."""
DIGEST_SIZE: Final = 8
"""Bytes of a line's blake2b digest."""


@dataclass(frozen=True, slots=True)
class Line:
    """One line of the file, as the splitter cut it."""

    raw: bytes | None
    """Its bytes, newline included; None for a line over :data:`LONGEST` (its bytes dropped)."""
    size: int
    """Its length in the file, newline included."""
    digest: bytes
    """blake2b of its bytes (:data:`DIGEST_SIZE` bytes), to tell an unchanged line."""
    head: bytes
    """Its first :data:`HEAD_BYTES` bytes."""


class LineSplitter:
    """Cuts a byte stream into :class:`Line` s; holds the unfinished last line between chunks."""

    def __init__(self) -> None:
        self._buf = bytearray()
        # The oversized line being skipped: its running digest, first bytes and size so far.
        self._skip: hashlib.blake2b | None = None
        self._skip_head = b""
        self._skipped = 0

    @property
    def pending(self) -> bool:
        """Whether part of an unfinished line has been fed (held, or being skipped)."""
        return bool(self._buf) or self._skip is not None

    def clear(self) -> None:
        """Forget the unfinished line (the stream starts again)."""
        self._buf, self._skip, self._skip_head, self._skipped = bytearray(), None, b"", 0

    def feed(self, chunk: bytes) -> list[Line]:
        """The lines that ``chunk`` completes, in order."""
        lines: list[Line] = []
        view = memoryview(chunk)
        i, n = 0, len(chunk)
        while i < n:
            j = chunk.find(b"\n", i)
            stop = n if j < 0 else j + 1
            if self._skip is not None:
                self._skip.update(view[i:stop])
                self._skipped += stop - i
            elif j >= 0 and not self._buf and stop - i <= LONGEST:
                lines.append(_whole(chunk[i:stop]))  # the common case: a whole line in one chunk
                i = stop
                continue
            else:
                self._buf += view[i:stop]
                if len(self._buf) > LONGEST:  # oversized: hash and drop, never hold it
                    self._skip = hashlib.blake2b(self._buf, digest_size=DIGEST_SIZE)
                    self._skip_head, self._skipped = bytes(self._buf[:HEAD_BYTES]), len(self._buf)
                    self._buf = bytearray()
            if j >= 0:
                lines.append(self._cut())
            i = stop
        return lines

    def flush(self) -> Line | None:
        """The unfinished line as it stands (no newline), or None; nothing is held after it."""
        return self._cut() if self.pending else None

    def _cut(self) -> Line:
        if self._skip is not None:
            line = Line(None, self._skipped, self._skip.digest(), self._skip_head)
            self._skip, self._skip_head, self._skipped = None, b"", 0
            return line
        raw = bytes(self._buf)
        self._buf = bytearray()
        return _whole(raw)


def _whole(raw: bytes) -> Line:
    digest = hashlib.blake2b(raw, digest_size=DIGEST_SIZE).digest()
    return Line(raw, len(raw), digest, raw[:HEAD_BYTES])


def line_entry(
    raw: bytes | None, start: int, end: int, line_no: int, *, torn: bool
) -> DialogEntry | None:
    """The entry of one line, or None for a blank line.

    Args:
        raw: The line's bytes; None for an oversized line (its bytes dropped).
        start: Its offset in the file.
        end: The offset just past it.
        line_no: Its number, from 1.
        torn: It is the file's last line and has no newline (the run ended without one).
    """
    if raw is None:
        size = end - start - (0 if torn else 1)
        kind: Literal["oversized_line", "truncated_tail"] = (
            "truncated_tail" if torn else "oversized_line"
        )
        prefix = "torn last line (no newline): " if torn else ""
        message = f"{prefix}line of {size} bytes exceeds the {MAX_LINE_BYTES}-byte limit"
        return ErrorEntry(
            seq=-1, ts=EPOCH_TS, kind=kind, message=message, line=line_no, offset=start, bytes=size
        )
    if not torn and not raw.strip():
        return None
    entry = parse_line(raw, line_no=line_no, offset=start)
    if torn and isinstance(entry, ErrorEntry):
        message = f"torn last line (no newline): {entry.message}"[:200]
        entry = entry.model_copy(update={"kind": "truncated_tail", "message": message})
    return entry
