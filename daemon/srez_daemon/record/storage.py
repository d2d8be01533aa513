"""Durable writes of a run's files: atomic JSON and the fsynced, append-only dialog.

Shared by everything that writes a run folder (the daemon, the inline backend, the mirror): a
state file is always the old or the new version, never a mix, and the dialog loses at most a
torn last line on a crash (docs/design.md §6-§7, docs/security.md A11).

Append-only files (:class:`JsonlFile`) are written one whole line per ``write`` (newline
included) and fsynced.

Each writer takes ``sync``: with ``sync=False`` a write is the same (atomic rename, whole lines)
but not fsynced. That is for files written inside a folder that is itself made durable before it
counts: the inline backend writes a run into ``.<run-id>.partial/`` without a flush per entry,
then :meth:`srez_client.results.layout.RunFolder.complete` flushes the folder whole once
(:func:`fsync_tree`) before the atomic rename. A crash before the rename leaves only the partial folder, which is
discarded; after it, every file is on disk. The daemon keeps ``sync=True``: its dialog is read
live and must survive a crash of the run itself. A write that fails or comes up short (``ENOSPC``, ``EIO``) is cut back to
the last whole line and raised as :class:`~srez_daemon.errors.RecordError`: a full disk leaves no
torn or merged line, and never a silent gap, because the caller learns of every failure.

:class:`DialogWriter` is the recorder's one writer: every entry gets its ``seq`` and is written
under one lock, so entries written from several threads (a tool call in a worker, an agent note)
never share a ``seq``, and ``seq`` grows in file order.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self, TypeVar

import orjson

from srez_daemon.errors import RecordError

if TYPE_CHECKING:  # imported lazily: atomic writes must not pull in the wire models
    from pydantic import BaseModel

    from srez_daemon.protocol import DialogEntry

Clock = Callable[[], datetime]
"""Returns the current time as an aware datetime."""

E = TypeVar("E", bound="DialogEntry")

logger = logging.getLogger(__name__)


def system_clock() -> datetime:
    """The current time in UTC."""
    return datetime.now(UTC)


def utc_timestamp(moment: datetime) -> str:
    """Format a time as UTC ISO-8601 with milliseconds and a ``Z`` suffix.

    Args:
        moment: An aware datetime (a naive one is refused).

    Returns:
        E.g. ``2025-03-14T10:03:00.125Z``.

    Raises:
        ValueError: If ``moment`` is naive.
    """
    if moment.tzinfo is None:
        msg = f"naive datetime {moment!r}: pass an aware time (UTC)"
        raise ValueError(msg)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (new, renamed or removed names) to disk."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    """Flush a file's content to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """Flush every file and folder under ``root`` (``root`` included) to disk, at once.

    On Linux this is one ``syncfs(2)`` of the file system holding ``root``: a single flush (one
    journal commit) instead of an fsync per file and folder, which costs a commit each (a run
    folder holds about twenty). Elsewhere each file, then each folder (deepest first), is
    fsynced.
    """
    if _syncfs(root):
        return
    folders = []
    for path in root.rglob("*"):
        if path.is_symlink():
            continue
        if path.is_dir():
            folders.append(path)
        else:
            fsync_file(path)
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        fsync_dir(folder)
    fsync_dir(root)


def _syncfs(root: Path) -> bool:
    """``syncfs(2)`` of the file system holding ``root``; False where there is none."""
    import ctypes  # only here: a few ms, and only for the hosts that flush a folder whole

    libc = ctypes.CDLL(None, use_errno=True)
    syncfs = getattr(libc, "syncfs", None)
    if syncfs is None:
        return False
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"syncfs of {root}: {os.strerror(err)}")
    finally:
        os.close(fd)
    return True


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o644, sync: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never a mix.

    Writes a temp file in the same folder, fsyncs it, renames it over ``path`` and fsyncs the
    folder. If anything fails, the temp file is removed and ``path`` is left as it was.

    Args:
        path: The file to write; its folder must exist.
        data: The new content.
        mode: The file's permissions (the temp file is created 0600, then given them).
        sync: fsync the file and its folder; False in a folder made durable as a whole later.
    """
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync:
        fsync_dir(path.parent)


def atomic_write_json(
    path: Path, value: BaseModel | dict[str, object], *, sync: bool = True
) -> None:
    """Write a pydantic model or a dict as indented JSON with :func:`atomic_write_bytes`."""
    if not isinstance(value, dict):
        data = orjson.dumps(value.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
    else:
        data = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    atomic_write_bytes(path, data + b"\n", sync=sync)


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
