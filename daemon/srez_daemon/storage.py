"""Durable writes of a run's files: atomic JSON and the fsynced, append-only dialog.

Shared by everything that writes a run folder (the daemon, the inline backend, the mirror): a
state file is always the old or the new version, never a mix, and the dialog loses at most a
torn last line on a crash (DESIGN.md §6-§7, SECURITY.md A11).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self, TypeVar

import orjson

if TYPE_CHECKING:  # imported lazily: atomic writes must not pull in the wire models
    from pydantic import BaseModel

    from srez_daemon.protocol import DialogEntry

Clock = Callable[[], datetime]
"""Returns the current time as an aware datetime."""

E = TypeVar("E", bound="DialogEntry")


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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never a mix.

    Writes a temp file in the same folder, fsyncs it, renames it over ``path`` and fsyncs the
    folder. If anything fails, the temp file is removed and ``path`` is left as it was.

    Args:
        path: The file to write; its folder must exist.
        data: The new content.
    """
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_json(path: Path, value: BaseModel | dict[str, object]) -> None:
    """Write a pydantic model or a dict as indented JSON with :func:`atomic_write_bytes`."""
    if not isinstance(value, dict):
        data = orjson.dumps(value.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
    else:
        data = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    atomic_write_bytes(path, data + b"\n")


class DialogWriter:
    """Appends dialog entries to a file, one fsynced line each, and owns ``seq`` and ``ts``.

    Use it as a context manager. Entries are built by a factory that receives the next ``seq`` and
    the current ``ts``, so every entry is validated when it is made::

        with DialogWriter(path, clock=clock) as dialog:
            dialog.append(lambda seq, ts: TaskPrompt(seq=seq, ts=ts, text=prompt))
    """

    def __init__(self, path: Path, *, clock: Clock = system_clock) -> None:
        """Open ``path`` for appending (it must not exist yet).

        Raises:
            FileExistsError: If the file exists: a dialog is never appended to across runs.
        """
        self._path = path
        self._clock = clock
        self._seq = 0
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        fsync_dir(path.parent)

    @property
    def path(self) -> Path:
        """The dialog file."""
        return self._path

    @property
    def count(self) -> int:
        """Entries written so far (also the next ``seq``)."""
        return self._seq

    def append(self, make: Callable[[int, str], E]) -> E:
        """Build the next entry with ``make(seq, ts)``, write it as one line and fsync.

        Returns:
            The entry as written.
        """
        if self._fd < 0:
            msg = f"dialog {self._path} is closed"
            raise ValueError(msg)
        from srez_daemon.protocol import encode_entry

        entry = make(self._seq, utc_timestamp(self._clock()))
        data = encode_entry(entry)
        written = 0
        while written < len(data):
            written += os.write(self._fd, data[written:])
        os.fsync(self._fd)
        self._seq += 1
        return entry

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
