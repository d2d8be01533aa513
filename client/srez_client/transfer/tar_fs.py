"""Write a run folder from a tar stream, safely: the filesystem side of :mod:`srez_client.transfer.tar`.

A container's run folder arrives as a tar stream, read once, front to back. Each member is judged
from its header by :class:`~srez_client.transfer.tar.TarPlanner` before any byte of it is read;
only accepted folders and regular files are written, through the same primitives as the directory
mirror (:mod:`srez_client.transfer.fs`): folders are made by this process and opened with
``O_NOFOLLOW``, files are created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` under them and fsynced.
Nothing is ever extracted by ``tarfile`` itself, so no link, device or FIFO is ever made, and no
name from the stream is ever resolved against the host's filesystem.

Refused members are skipped in the stream (their bytes read and dropped). The stream as a whole
is capped too (:data:`MAX_STREAM_BYTES`): a run folder holding a 1 TB sparse file would otherwise
cost a 1 TB read to skip. Past the cap the copy stops and is marked ``artifacts_truncated``.
Blocking: callers run it in a thread.
"""

from __future__ import annotations

import collections
import contextlib
import io
import logging
import os
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from srez_client.errors import MirrorError
from srez_client.sanitize import escape_bytes
from srez_client.transfer.fs import O_DIR, open_dir_nofollow, write_new_file
from srez_client.transfer.plan import (
    CONTAINER_LOG,
    DEFAULT_LIMITS,
    RECORD_FILES,
    FileRecord,
    MirrorLimits,
    MirrorReport,
    Skipped,
)
from srez_client.transfer.tar import Accept, Dropped, Root, Stop, TarPlanner, member_of
from srez_client.transfer.tree import write_record

logger = logging.getLogger(__name__)

MAX_STREAM_BYTES: Final = 8 << 30
"""Bytes read from one stream at most (refused members included), 8× the default total cap."""
_BUFSIZE: Final = 1 << 20


class StreamCapError(Exception):
    """The stream passed :data:`MAX_STREAM_BYTES`."""


class ChunkReader(io.RawIOBase):
    """A read-only file over an iterator of byte chunks that refuses to read past a cap."""

    def __init__(self, chunks: Iterable[bytes], max_bytes: int = MAX_STREAM_BYTES) -> None:
        """Read ``chunks`` in order; raise :class:`StreamCapError` past ``max_bytes``."""
        super().__init__()
        self._chunks: Iterator[bytes] = iter(chunks)
        self._pending = memoryview(b"")  # a view: handing out a piece copies nothing else
        self.max_bytes = max_bytes
        self.consumed = 0
        """Bytes handed out so far."""

    def readable(self) -> bool:
        """Always True."""
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        """Fill ``buffer`` from the next chunks; 0 at the end."""
        while not self._pending:
            nxt = next(self._chunks, None)
            if nxt is None:
                return 0
            self._pending = memoryview(nxt)
        n = min(len(buffer), len(self._pending))
        if self.consumed + n > self.max_bytes:
            msg = f"the archive stream passed {self.max_bytes} bytes"
            raise StreamCapError(msg)
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        self.consumed += n
        return n


@dataclass(slots=True)
class _Writer:
    """The folders open while writing (a stack: tar streams list parents before children)."""

    root_fd: int
    stack: list[tuple[tuple[bytes, ...], int]] = field(default_factory=list)
    files: list[FileRecord] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def folder(self, parts: tuple[bytes, ...]) -> int:
        """The descriptor of the accepted folder ``parts`` (reopened if it was left)."""
        while self.stack and self.stack[-1][0] != parts[: len(self.stack[-1][0])]:
            _close_dir(self.stack.pop()[1])
        fd = self.stack[-1][1] if self.stack else self.root_fd
        depth = len(self.stack[-1][0]) if self.stack else 0
        for i in range(depth, len(parts)):  # a folder the stream came back to: walk down again
            child = open_dir_nofollow(fd, os.fsdecode(parts[i]))
            if child is None:
                msg = f"folder {escape_bytes(b'/'.join(parts[: i + 1]))} vanished while copying"
                raise MirrorError(msg)
            self.stack.append((parts[: i + 1], child))
            fd = child
        return fd

    def close(self) -> None:
        while self.stack:
            _close_dir(self.stack.pop()[1])


def _close_dir(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def extract_run_tar(
    chunks: Iterable[bytes],
    dest: Path,
    root: bytes,
    limits: MirrorLimits = DEFAULT_LIMITS,
    *,
    max_stream_bytes: int = MAX_STREAM_BYTES,
) -> MirrorReport:
    """Write the folder ``root`` of a tar stream into the new folder ``dest``.

    Args:
        chunks: The uncompressed tar stream.
        dest: The folder to create (its parent must exist).
        root: The first component of every member (the requested folder's name).
        limits: The caps.
        max_stream_bytes: Bytes read from the stream at most.

    Returns:
        What was written and refused.

    Raises:
        FileExistsError: If ``dest`` exists.
        MirrorError: If the stream is not a tar stream at all.
        OSError: If writing fails (``dest`` is left for the caller to remove).
    """
    dest.mkdir(0o755)
    writer = _Writer(os.open(dest, O_DIR))
    planner = TarPlanner(root, limits)
    reader = ChunkReader(chunks, max_stream_bytes)
    truncated = False
    try:
        try:
            stream = tarfile.open(fileobj=reader, mode="r|", bufsize=_BUFSIZE)  # noqa: SIM115
        except tarfile.TarError as e:
            msg = f"the archive of {root.decode(errors='replace')} is not a tar stream: {e}"
            raise MirrorError(msg) from e
        with stream:
            truncated = _write_members(stream, planner, writer, limits)
    except StreamCapError as e:
        logger.warning("stopped copying: %s; the copy is truncated", e)
        truncated = True
    finally:
        writer.close()
        _close_dir(writer.root_fd)
    if planner.dropped:
        logger.warning("%d more refused archive members were not listed", planner.dropped)
    return MirrorReport(tuple(writer.files), tuple(writer.skipped), truncated or planner.truncated)


def _write_members(
    stream: tarfile.TarFile, planner: TarPlanner, writer: _Writer, limits: MirrorLimits
) -> bool:
    """Write the accepted members; returns whether the stream ended early."""
    budget = limits.max_total_bytes
    try:
        for info in stream:
            decision = planner.decide(member_of(info))
            if isinstance(decision, Stop):
                logger.warning("stopped copying after too many archive members")
                return True
            if isinstance(decision, Root | Dropped):
                continue
            if not isinstance(decision, Accept):
                writer.skipped.append(decision)
                continue
            parent = writer.folder(decision.parts[:-1])
            name = os.fsdecode(decision.parts[-1])
            if decision.type == "dir":
                os.mkdir(name, 0o755, dir_fd=parent)
                writer.folder(decision.parts)
                continue
            source = stream.extractfile(info)
            if source is None:  # isreg() members always have data; be strict anyway
                writer.skipped.append(Skipped(decision.parts, "file", "unreadable"))
                continue
            # the run's record is copied whatever the total budget (srez_client.transfer.plan.RECORD_FILES)
            record = decision.parts in RECORD_FILES
            cap = decision.size if record else min(decision.size, budget)
            with source:
                written = write_new_file(parent, name, source.read, cap)
            if written is None:  # the member held more than its header said
                writer.skipped.append(Skipped(decision.parts, "file", "changed"))
                continue
            size, sha256 = written
            budget = max(0, budget - size)
            path = escape_bytes(b"/".join(decision.parts))
            writer.files.append(FileRecord(path=path, size=size, sha256=sha256))
    except (tarfile.TarError, EOFError) as e:  # a broken stream: keep what was complete
        logger.warning("the archive stream ended early (%s); the copy is truncated", e)
        return True
    return False


def write_tail(dest: Path, relative: tuple[bytes, ...], chunks: Iterable[bytes], cap: int) -> int:
    """Write the last ``cap`` bytes of ``chunks`` as the new file ``dest/<relative>``.

    Folders on the way are created (or opened, never through a link). Returns the bytes written.
    """
    tail: collections.deque[bytes] = collections.deque()
    held = 0
    for chunk in chunks:
        tail.append(chunk)
        held += len(chunk)
        while held - len(tail[0]) >= cap:
            held -= len(tail.popleft())
    data = b"".join(tail)[-cap:] if cap > 0 else b""
    fd = os.open(dest, O_DIR)
    try:
        for part in relative[:-1]:
            name = os.fsdecode(part)
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o755, dir_fd=fd)
            child = open_dir_nofollow(fd, name)
            if child is None:
                msg = f"{dest}/{name} is not a folder this copy made"
                raise MirrorError(msg)
            _close_dir(fd)
            fd = child
        view = io.BytesIO(data)
        written = write_new_file(fd, os.fsdecode(relative[-1]), view.read, len(data))
    finally:
        _close_dir(fd)
    return 0 if written is None else written[0]


def finish_copy_out(
    dest: Path,
    report: MirrorReport,
    logs: Iterable[bytes],
    *,
    run_id: str,
    limits: MirrorLimits = DEFAULT_LIMITS,
) -> None:
    """Complete a copy-out: ``logs/container.log`` (the last ``limits.max_file_bytes`` of
    ``logs``) and ``mirror.json``.

    Call it once the archive stream is closed: an engine may hold the container while it
    streams an archive and answer nothing else about it meanwhile.
    """
    write_tail(dest, CONTAINER_LOG, logs, limits.max_file_bytes)
    write_record(dest, report.record(run_id))
