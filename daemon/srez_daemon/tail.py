"""Follows a run's ``archive/dialog.jsonl`` by byte offset (docs/design.md §6, docs/security.md A7).

:class:`DialogTail` turns every complete line into a :class:`DialogFrame` for its listeners (the
WebSocket hub) and answers page reads (``GET /api/dialog``) from the same index of line ends, so
the live stream and the pages agree on offsets, line numbers and entries.

What a line becomes:

* a line of at most :data:`MAX_LINE_BYTES` becomes what :func:`parse_line` makes of it (an entry,
  or an error entry naming its line number and byte offset); blank lines are skipped;
* a longer line is never buffered (:class:`~srez_daemon.dialog_lines.LineSplitter` hashes and
  drops its bytes up to its newline), and it becomes one ``oversized_line`` error entry;
* a last line without its newline is *pending* (nothing is sent) while the run is live; after
  :meth:`DialogTail.finish` it is parsed, and becomes one ``truncated_tail`` error entry when it is
  not a valid entry (as :func:`iter_dialog` reads a finished file);
* when the file shrinks, is rewritten in place or is replaced by a new inode, the tail re-reads it
  from byte 0 and compares each line with what it has already delivered (offset and a digest). The
  unchanged prefix is not sent again; one ``file_reset`` error entry whose ``offset`` K is the end
  of that prefix tells viewers to drop what they hold from K on, and frames go on from K.

Changes are reported by a :class:`~srez_daemon.file_watch.FileWatch` (inotify on the parent
folder, or watchfiles); a ``stat()`` every ``safety_poll_s`` catches anything it missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from array import array
from bisect import bisect_left
from collections.abc import Callable
from pathlib import Path
from typing import Final

from srez_core.aio import cancel_and_wait, spawn
from srez_core.clock import system_clock, utc_timestamp
from srez_daemon.dialog_lines import DIGEST_SIZE, LONGEST, Line, LineSplitter, line_entry
from srez_daemon.file_watch import FileWatch, Watcher
from srez_daemon.protocol import ErrorEntry
from srez_daemon.protocol.api import DialogFrame, DialogPage

logger = logging.getLogger(__name__)

_CHUNK: Final = 64 * 1024  # one read; a line longer than this is assembled from several
_SLICE: Final = 4 * 1024 * 1024  # bytes read before the loop gets control back ...
_SLICE_LINES: Final = 256  # ... or lines parsed (a parse costs ~20-50 us): other requests wait
_PAGE_BYTES: Final = 8 * 1024 * 1024  # a page stops after this much line data (>= 1 entry)


class DialogTail:
    """Follows one dialog file by byte offset; see the module docstring for what lines become.

    Frames go to listeners synchronously, in file order, from the event loop. Offsets are byte
    offsets in the *current* file: after a ``file_reset`` frame at offset K, what a viewer holds
    from K on is gone, and the frames that follow start at K.
    """

    def __init__(
        self,
        path: Path,
        *,
        step_ms: int = 1,
        safety_poll_s: float = 1.0,
        watcher: Watcher = "auto",
    ) -> None:
        """Prepare a tail; nothing is read before :meth:`start`.

        Args:
            path: The dialog file; it and its folder may not exist yet.
            step_ms: watchfiles' polling step (only when the watcher is watchfiles).
            safety_poll_s: Seconds between ``stat()`` checks when no change is reported.
            watcher: ``auto`` (inotify on Linux, else watchfiles), ``inotify`` or ``watchfiles``.
        """
        self._path = path
        self._safety_poll_s = safety_poll_s
        self._listeners: list[Callable[[DialogFrame], None]] = []
        self._dirty = asyncio.Event()
        self._watch = FileWatch(path, self._dirty.set, watcher=watcher, step_ms=step_ms)
        self._task: asyncio.Task[None] | None = None
        self._fd: int | None = None
        self._ident = (0, 0)
        self._finished = False
        # Index of consumed lines: end offset and digest of each; line i starts at _ends[i - 1].
        self._ends: array[int] = array("q")
        self._digests = bytearray()
        self._torn: set[int] = set()  # ends of tails flushed by finish() (no newline)
        self._last = (0, b"")  # start and first bytes of the last consumed line
        # Reading state: bytes consumed, where the pending line starts, the pending line.
        self._pos = 0
        self._line_start = 0
        self._lines = LineSplitter()
        self._lines_read = 0  # lines completed so far (for the slice budget)
        # After a reset: lines of the old index matched so far in the new file, and why.
        self._verify: int | None = None
        self._reset_reason = ""

    @property
    def path(self) -> Path:
        """The dialog file."""
        return self._path

    @property
    def end_offset(self) -> int:
        """End of the last complete line read (a pending partial line is not counted)."""
        return self._ends[-1] if self._ends else 0

    @property
    def finished(self) -> bool:
        """Whether :meth:`finish` was called."""
        return self._finished

    async def start(self) -> None:
        """Read what the file holds now, then follow it in a background task."""
        if self._task is not None:
            return
        await self._watch.ensure()  # before the first read: no append falls between the two
        await self._read_all()
        self._task = spawn(self._run(), name=f"dialog-tail:{self._path.name}")

    async def stop(self) -> None:
        """Stop following the file and release it (idempotent)."""
        await cancel_and_wait(self._task)
        self._task = None
        await self._watch.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def finish(self) -> None:
        """The run ended: read to the end now and flush a pending last line (idempotent).

        A last line without its newline is delivered as what :func:`parse_line` makes of it, with
        an error turned into ``truncated_tail``. Bytes appended later are read as new lines.
        """
        if self._finished:
            return
        self._finished = True
        while self._read_slice(budget=1 << 62, lines=1 << 62):
            pass

    def add_listener(self, listener: Callable[[DialogFrame], None]) -> Callable[[], None]:
        """Call ``listener(frame)`` for every new frame, in order, on the event loop.

        Returns:
            A function that removes the listener.
        """
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def read_frames(
        self, offset: int, limit: int = 1000, *, until: int | None = None
    ) -> tuple[list[DialogFrame], int]:
        """Frames of the complete lines from ``offset``, read from the file (synchronously).

        Offsets are meant to be line starts (0, or a frame's ``next_offset``). Any other offset is
        answered with what is valid: inside a line, the page starts at the next line start; past
        the last complete line, the page is empty and ``next_offset`` is :attr:`end_offset`.

        Args:
            offset: Byte offset to start at (>= 0).
            limit: Most frames to return (>= 1); a page also stops after 8 MiB of lines.
            until: Return no line that ends after this offset.

        Returns:
            The frames, and where the next read starts (the end of the last line consumed; blank
            lines are consumed without a frame).

        Raises:
            ValueError: If ``offset`` is negative or ``limit`` is below 1.
        """
        if offset < 0 or limit < 1:
            msg = f"offset={offset}, limit={limit}: offset must be >= 0 and limit >= 1"
            raise ValueError(msg)
        ends, count = self._ends, len(self._ends)
        stop = self.end_offset if until is None else min(until, self.end_offset)
        i = 0 if offset == 0 else min(bisect_left(ends, offset) + 1, count)
        pos = ends[i - 1] if i else 0
        frames: list[DialogFrame] = []
        size = 0
        while (
            self._fd is not None
            and i < count
            and ends[i] <= stop
            and len(frames) < limit
            and size < _PAGE_BYTES
        ):
            end = ends[i]
            raw = None if end - pos > LONGEST else os.pread(self._fd, end - pos, pos)
            if raw is not None and len(raw) != end - pos:
                break  # the file shrank under us; the reset that follows says so
            entry = line_entry(raw, pos, end, i + 1, torn=end in self._torn)
            if entry is not None:
                frames.append(DialogFrame(offset=pos, next_offset=end, entry=entry))
                size += 256 if raw is None else len(raw)  # an oversized line costs its entry
            pos = end
            i += 1
        return frames, pos

    def read_page(self, offset: int, limit: int = 1000) -> DialogPage:
        """``GET /api/dialog?offset=N``: entries of the complete lines from ``offset``.

        Same offset rules as :meth:`read_frames`: an offset inside a line starts at the next line;
        one past the end answers no entries and ``next_offset`` = :attr:`end_offset`.

        Raises:
            ValueError: If ``offset`` is negative or ``limit`` is below 1.
        """
        frames, next_offset = self.read_frames(offset, limit)
        return DialogPage(entries=[f.entry for f in frames], next_offset=next_offset)

    # ------------------------------------------------------------------ following the file

    async def _run(self) -> None:
        while True:
            if not self._dirty.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._safety_poll_s):
                        await self._dirty.wait()
            self._dirty.clear()
            try:
                await self._watch.ensure()
                await self._read_all()
            except Exception:  # keep following: the next wake-up tries again
                logger.exception("following %s failed at byte %d", self._path, self._pos)

    async def _read_all(self) -> None:
        more = True
        while more:
            more = self._read_slice()
            if more:
                await asyncio.sleep(0)  # a huge append must not stall the other requests

    def _read_slice(self, budget: int = _SLICE, lines: int = _SLICE_LINES) -> bool:
        """Read up to ``budget`` bytes or ``lines`` lines and deliver what completes; True if
        more is waiting."""
        if not self._sync_file():
            return False
        assert self._fd is not None
        done = 0
        first_line = self._lines_read
        while done < budget and self._lines_read - first_line < lines:
            try:
                chunk = os.pread(self._fd, _CHUNK, self._pos)
            except OSError as e:
                logger.warning("reading %s at byte %d failed: %s", self._path, self._pos, e)
                return False
            if not chunk:
                self._at_eof()
                return False
            self._pos += len(chunk)
            done += len(chunk)
            self._feed(chunk)
        return True

    def _sync_file(self) -> bool:
        """Open, reopen or rewind as the file on disk says; False if there is nothing to read."""
        try:
            st = self._path.stat(follow_symlinks=False)
        except OSError:
            return self._fd is not None  # gone for now: keep what is open
        if not stat.S_ISREG(st.st_mode):
            return self._fd is not None  # a link, FIFO or device is never opened
        if self._fd is None or (st.st_ino, st.st_dev) != self._ident:
            return self._reopen()
        if st.st_size < self._pos:
            self._begin_reset(f"file shrank to {st.st_size} bytes")
            return True
        start, head = self._last
        if head and os.pread(self._fd, len(head), start) != head:
            self._begin_reset(f"file rewritten (line at byte {start} changed)")
        return True

    def _reopen(self) -> bool:
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(self._path, flags)
        except OSError:
            return self._fd is not None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return self._fd is not None
        old_fd, old_ino = self._fd, self._ident[0]
        self._fd, self._ident = fd, (st.st_ino, st.st_dev)
        if old_fd is not None:
            os.close(old_fd)
            self._begin_reset(f"file replaced (inode {old_ino} -> {st.st_ino})")
        return True

    def _feed(self, chunk: bytes) -> None:
        for line in self._lines.feed(chunk):
            self._complete(line)

    def _complete(self, line: Line, *, torn: bool = False) -> None:
        """A line ended (at a newline, or at EOF after finish): index it and deliver it."""
        self._lines_read += 1
        start = self._line_start
        end = self._line_start = start + line.size
        k = self._verify
        if k is not None:
            if k < len(self._ends) and self._ends[k] == end and self._digest(k) == line.digest:
                self._verify = k + 1  # unchanged since it was delivered: not sent again
                self._last = (start, line.head)
                return
            self._conclude_reset()
        self._ends.append(end)
        self._digests += line.digest
        self._last = (start, line.head)
        if torn:
            self._torn.add(end)
        entry = line_entry(line.raw, start, end, len(self._ends), torn=torn)
        if entry is not None:
            self._emit(DialogFrame(offset=start, next_offset=end, entry=entry))

    def _at_eof(self) -> None:
        if self._verify is not None:
            self._conclude_reset()
        if self._finished and (last := self._lines.flush()) is not None:
            self._complete(last, torn=True)

    def _digest(self, k: int) -> bytes:
        return bytes(self._digests[k * DIGEST_SIZE : (k + 1) * DIGEST_SIZE])

    def _begin_reset(self, reason: str) -> None:
        """Re-read from byte 0, comparing lines with the index (kept until the comparison ends)."""
        logger.info("dialog %s: %s; reading it again from byte 0", self._path, reason)
        self._verify, self._reset_reason = 0, reason
        self._pos = self._line_start = 0
        self._lines.clear()
        self._last = (0, b"")

    def _conclude_reset(self) -> None:
        """The new file differs from line K on (or ends there): drop the rest, send file_reset."""
        kept = self._verify or 0
        self._verify = None
        old_end = self.end_offset
        del self._ends[kept:]
        del self._digests[kept * DIGEST_SIZE :]
        cut = self.end_offset
        self._torn = {end for end in self._torn if end <= cut}
        message = f"{self._reset_reason}; entries from byte {cut} on ({old_end - cut} bytes) are withdrawn"
        entry = ErrorEntry(
            seq=-1,
            ts=utc_timestamp(system_clock()),
            kind="file_reset",
            message=message[:200],
            line=kept + 1,
            offset=cut,
            bytes=0,
        )
        self._emit(DialogFrame(offset=cut, next_offset=cut, entry=entry))

    def _emit(self, frame: DialogFrame) -> None:
        for listener in list(self._listeners):
            try:
                listener(frame)
            except Exception:
                logger.exception(
                    "dialog listener %r failed on the frame at %d", listener, frame.offset
                )
