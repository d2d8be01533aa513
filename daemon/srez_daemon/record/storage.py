"""The fsynced, append-only dialog of a run (docs/design.md §6-§7, docs/security.md A11).

The dialog loses at most a torn last line on a crash. Append-only files (:class:`JsonlFile`) are
written one whole line per ``write`` (newline included) and fsynced; state files are written with
:mod:`srez_core.atomic`.

Each writer takes ``sync``: with ``sync=False`` a write is the same (whole lines) but not fsynced.
That is for files written inside a folder that is itself made durable before it counts: the inline
backend writes a run into ``.<run-id>.partial/`` without a flush per entry, then flushes the folder
whole once (:func:`srez_core.atomic.fsync_tree`) before the atomic rename. The daemon keeps
``sync=True``: its dialog is read live and must survive a crash of the run itself. A write that
fails or comes up short (``ENOSPC``, ``EIO``) is cut back to the last whole line and raised as
:class:`~srez_daemon.errors.RecordError`: a full disk leaves no torn or merged line, and never a
silent gap, because the caller learns of every failure.

:class:`DialogWriter` is the recorder's one writer: every entry gets its ``seq`` and is written
under one lock, so entries written from several threads (a tool call in a worker, an agent note)
never share a ``seq``, and ``seq`` grows in file order.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self, TypeVar

from srez_core.atomic import fsync_dir
from srez_core.clock import Clock, system_clock, utc_timestamp
from srez_daemon.errors import RecordError

if TYPE_CHECKING:  # imported lazily: the dialog's writer must not pull in the wire models
    from srez_daemon.protocol import DialogEntry

E = TypeVar("E", bound="DialogEntry")

logger = logging.getLogger(__name__)


class JsonlFile:
    """An append-only file of lines: each append is one ``write`` of whole lines, then fsync
    (unless ``sync`` is False).

    Not thread-safe by itself: :class:`DialogWriter` serialises its appends under its lock.
    """

    def __init__(self, path: Path, *, exclusive: bool = False, sync: bool = True) -> None:
        """Open ``path`` for appending, creating it.

        Args:
            path: The file.
            exclusive: Refuse a file that exists (``FileExistsError``).
            sync: fsync the folder now and the file after each append; False in a folder made
                durable as a whole later (the module's docstring).
        """
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_EXCL if exclusive else 0)
        self._path = path
        self._sync = sync
        self._fd = os.open(path, flags, 0o644)
        self._size = os.fstat(self._fd).st_size
        if sync:
            fsync_dir(path.parent)

    @property
    def path(self) -> Path:
        """The file."""
        return self._path

    @property
    def size(self) -> int:
        """Bytes of whole lines written (the end of the file)."""
        return self._size

    def append(self, data: bytes, *, what: str = "a line") -> None:
        """Write ``data`` (whole lines, ending in ``\\n``) in one write and fsync it.

        Raises:
            RecordError: If the write failed or came up short, or fsync failed; the file has been
                cut back to what it held before (as far as the system allows).
            ValueError: If the file is closed or ``data`` does not end a line.
        """
        if self._fd < 0:
            msg = f"{self._path} is closed"
            raise ValueError(msg)
        if not data.endswith(b"\n"):
            msg = f"{what} for {self._path} does not end in a newline"
            raise ValueError(msg)
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"short write ({written} of {len(data)} bytes)")
            if self._sync:
                os.fsync(self._fd)
        except OSError as e:
            self.cut_back(self._size)
            reason = e.strerror or str(e)
            msg = f"cannot write {what} ({len(data)} bytes) to {self._path}: {reason}"
            raise RecordError(e.errno or errno.EIO, msg) from e
        self._size += written

    def cut_back(self, size: int) -> None:
        """Truncate the file to ``size`` bytes (a whole-line boundary); a failure is logged."""
        try:
            os.ftruncate(self._fd, size)
            self._size = size
        except OSError as e:  # pragma: no cover - a file that cannot shrink
            logger.error("cannot cut %s back to %d bytes: %s", self._path, size, e)

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class DialogWriter:
    """Appends dialog entries to a file, one fsynced line each, and owns ``seq`` and ``ts``.

    Use it as a context manager. Entries are built by a factory that receives the next ``seq`` and
    the current ``ts``, so every entry is validated when it is made::

        with DialogWriter(path, clock=clock) as dialog:
            dialog.append(lambda seq, ts: TaskPrompt(seq=seq, ts=ts, text=prompt))

    Thread-safe: the factory, the write and the ``seq`` increment happen under one lock. A write
    that fails (:class:`~srez_daemon.errors.RecordError`) uses no ``seq`` and leaves the file at
    its last whole line.
    """

    def __init__(self, path: Path, *, clock: Clock = system_clock, sync: bool = True) -> None:
        """Open ``path`` for appending (it must not exist yet); ``sync``: as :class:`JsonlFile`.

        Raises:
            FileExistsError: If the file exists: a dialog is never appended to across runs.
        """
        self._path = path
        self._clock = clock
        self._seq = 0
        self._lock = threading.Lock()
        self._file = JsonlFile(path, exclusive=True, sync=sync)

    @property
    def path(self) -> Path:
        """The dialog file."""
        return self._path

    @property
    def count(self) -> int:
        """Entries written so far (also the next ``seq``)."""
        return self._seq

    @property
    def size(self) -> int:
        """Where the dialog ends: the bytes of the whole lines written so far."""
        return self._file.size

    def append(
        self,
        make: Callable[[int, str], E],
        *,
        check: Callable[[bytes], None] | None = None,
        also: tuple[JsonlFile, bytes] | None = None,
    ) -> E:
        """Build the next entry with ``make(seq, ts)``, write it as one line and fsync.

        Args:
            make: Builds the entry from its ``seq`` and ``ts``.
            check: Called with the encoded line before it is written, under the lock; whatever
                it raises propagates and nothing is written (a cap on notes, say).
            also: Lines for a companion file, written first under the same lock and cut back if
                the entry cannot be written: a step's transcript line and its ``tool_result``
                land together or not at all.

        Returns:
            The entry as written.

        Raises:
            RecordError: If a write failed; nothing of this entry (or ``also``) remains.
        """
        from srez_daemon.protocol import encode_entry

        with self._lock:
            entry = make(self._seq, utc_timestamp(self._clock()))
            data = encode_entry(entry)
            if check is not None:
                check(data)
            companion, lines = also if also is not None else (None, b"")
            mark = companion.size if companion is not None else 0
            if companion is not None and lines:
                companion.append(lines, what=f"the lines of dialog entry {self._seq}")
            try:
                self._file.append(data, what=f"dialog entry {self._seq} ({entry.type})")
            except RecordError:
                if companion is not None:
                    companion.cut_back(mark)
                raise
            self._seq += 1
            return entry

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class SpaceReserve:
    """Disk space held back for the files that end a run.

    A run whose disk fills must still write its closing entry, its patches, its grade and
    ``summary.json``. The reserve is a file of ``size`` allocated blocks made at the start;
    :meth:`release` deletes it just before those last files are written, so they find room
    even on a disk that stays full.
    """

    def __init__(self, path: Path, size: int) -> None:
        self._path = path
        self._size = size
        self._held = False

    def hold(self) -> bool:
        """Allocate the reserve; False (and nothing held) if the disk has no room for it."""
        try:
            fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError as e:
            logger.warning("no space reserve at %s: %s", self._path, e)
            return False
        try:
            try:
                os.posix_fallocate(fd, 0, self._size)
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                os.write(fd, bytes(self._size))  # a file system without fallocate
            os.fsync(fd)
        except OSError as e:
            logger.warning("no space reserve at %s: %s", self._path, e)
            self._path.unlink(missing_ok=True)
            return False
        finally:
            os.close(fd)
        self._held = True
        return True

    def release(self) -> None:
        """Give the space back (idempotent)."""
        if self._held:
            self._held = False
            with contextlib.suppress(OSError):
                self._path.unlink()
