"""The mirror's filesystem side: list a tree and copy a plan, never following a link.

Every name is resolved relative to the descriptor of its folder, one component at a time, with
``O_NOFOLLOW``; a source is first opened as an ``O_PATH`` handle, which reads nothing, and read
only when ``fstat`` on that handle shows the regular file (same device and inode, one link) the
listing saw. So a symlink, FIFO or device swapped in after the listing is never opened for reading
and a hang on a FIFO cannot happen. Destinations are created with ``O_CREAT | O_EXCL |
O_NOFOLLOW`` under folders this module made. Blocking: callers run it in a thread.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final, TypeVar

from pydantic import BaseModel, ValidationError

from srez_client.errors import MirrorError
from srez_client.sanitize import escape_bytes
from srez_client.transfer.plan import (
    DEFAULT_LIMITS,
    RECORD_FILES,
    FileRecord,
    MirrorLimits,
    MirrorPlan,
    MirrorReport,
    Skipped,
    SkipReason,
    SourceEntry,
    bad_name,
    entry_type,
    file_cap,
)

logger = logging.getLogger(__name__)

Model = TypeVar("Model", bound=BaseModel)

O_DIR: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""Open a folder, refusing a link."""
_O_PATH: Final = getattr(os, "O_PATH", 0)
_O_CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK: Final = 1 << 20

Identity = tuple[int, int]
"""(st_dev, st_ino) of a file."""


def open_dir_nofollow(parent_fd: int, name: str, expect: Identity | None = None) -> int | None:
    """Open the folder ``name`` under ``parent_fd`` without following a link.

    Returns:
        Its descriptor, or None if it is not a folder, is a link, or is not ``expect``.
    """
    try:
        fd = os.open(name, O_DIR, dir_fd=parent_fd)
    except OSError:
        return None
    st = os.fstat(fd)
    if expect is not None and (st.st_dev, st.st_ino) != expect:
        os.close(fd)
        return None
    return fd


def open_below(root: Path, folder: Path) -> int | None:
    """The folder ``folder`` under ``root`` opened one component at a time, following no link
    below ``root``: its descriptor (the caller closes it), or None when a component is missing,
    not a folder or a link. What is read through it is the folder that was opened, even if a
    link is put in its place a moment later."""
    try:
        parts = folder.relative_to(root).parts
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    for name in parts:
        child = open_dir_nofollow(fd, name)
        os.close(fd)
        if child is None:
            return None
        fd = child
    return fd


def reached_without_links(root: Path, folder: Path) -> bool:
    """Whether ``folder`` (under ``root``) is the folder a walk from ``root`` that follows no
    link reaches: False when a component below ``root`` is a link now (a run folder, or a folder
    above it, swapped for a link after the results were listed). Reads by path that follow
    may still race a swap made after this check; the window is the check's, not a listing's."""
    fd = open_below(root, folder)
    if fd is None:
        return False
    try:
        walked = os.fstat(fd)
        named = folder.stat()
    except OSError:
        return False
    finally:
        os.close(fd)
    return (walked.st_dev, walked.st_ino) == (named.st_dev, named.st_ino)


def open_regular(dir_fd: int, name: str, expect: Identity | None = None) -> int | SkipReason:
    """Open ``name`` under ``dir_fd`` for reading, only if it is a regular file with one link.

    Returns:
        A descriptor, or why the file is not read (``changed``: not what was listed;
        ``unreadable``: it could not be opened).
    """
    if not _O_PATH:  # no O_PATH (not Linux): O_NONBLOCK at least keeps a FIFO from hanging
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        try:
            fd = os.open(name, flags, dir_fd=dir_fd)
        except OSError:
            return "unreadable"
        return fd if _is_expected(fd, expect) else _close_as(fd, "changed")
    try:
        handle = os.open(name, _O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return "unreadable"
    try:
        if not _is_expected(handle, expect):
            return "changed"
        try:  # reopening the handle reads the very inode it names, and nothing else
            fd = os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError:
            return "unreadable"
        return fd if _is_expected(fd, expect) else _close_as(fd, "changed")
    finally:
        os.close(handle)


def _is_expected(fd: int, expect: Identity | None) -> bool:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        return False
    return expect is None or (st.st_dev, st.st_ino) == expect


def _close_as(fd: int, reason: SkipReason) -> SkipReason:
    os.close(fd)
    return reason


def read_small_file(folder: Path, name: bytes, max_bytes: int) -> bytes | None:
    """The content of the regular file ``folder/name``, or None (missing, a link, too large)."""
    try:
        dir_fd = os.open(folder, O_DIR)
    except OSError:
        return None
    try:
        fd = open_regular(dir_fd, os.fsdecode(name))
    finally:
        os.close(dir_fd)
    if isinstance(fd, str):
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(max_bytes + 1)
    return data if len(data) <= max_bytes else None


def open_file(folder: Path, name: str) -> BinaryIO | None:
    """The regular file ``folder/name`` opened for reading (no link followed at either), or
    None; the caller closes it."""
    try:
        dir_fd = os.open(folder, O_DIR)
    except OSError:
        return None
    try:
        fd = open_regular(dir_fd, name)
    finally:
        os.close(dir_fd)
    return None if isinstance(fd, str) else os.fdopen(fd, "rb")


def read_range(
    folder: Path, name: str, end: int | None, most: int
) -> tuple[bytes, int, int] | None:
    """Up to ``most`` bytes of the regular file ``folder/name`` ending at ``end`` (default: its
    end), with the offset they start at and the file's size; None when it is missing or a link.
    Memory stays at ``most`` however large the file is."""
    opened = open_file(folder, name)
    if opened is None:
        return None
    with opened as f:
        size = os.fstat(f.fileno()).st_size
        stop = size if end is None else min(max(0, end), size)
        start = max(0, stop - most)
        f.seek(start)
        return f.read(stop - start), start, size


def read_range_head(folder: Path, name: str, most: int) -> tuple[bytes, int] | None:
    """The first ``most`` bytes of the regular file ``folder/name`` and its size; None when it
    is missing or a link."""
    opened = open_file(folder, name)
    if opened is None:
        return None
    with opened as f:
        return f.read(most), os.fstat(f.fileno()).st_size


def read_small_model(folder: Path, name: bytes, model: type[Model], max_bytes: int) -> Model | None:
    """The regular file ``folder/name`` read as ``model``, or None: missing, a link, too large,
    or not valid (that one is logged: a record file that does not parse is worth a look)."""
    data = read_small_file(folder, name, max_bytes)
    if data is None:
        return None
    try:
        return model.model_validate_json(data)
    except ValidationError:
        logger.warning("ignored an invalid %s in %s", os.fsdecode(name), folder)
        return None


def scan_tree(root: Path, limits: MirrorLimits = DEFAULT_LIMITS) -> tuple[list[SourceEntry], bool]:
    """List a tree with ``lstat``, through folder descriptors, never following a link.

    Folders are entered only when opening them with ``O_NOFOLLOW`` gives the folder that was
    listed, and no deeper than ``limits.max_depth``. Entries are sorted by name in each folder,
    parents before children.

    Args:
        root: The folder to list (itself not a link).
        limits: The caps; listing stops after twice ``max_files`` entries (plus 1000).

    Returns:
        The entries and whether the listing stopped early.

    Raises:
        MirrorError: If ``root`` is not a folder, is a link, or cannot be read.
    """
    try:
        root_fd = os.open(root, O_DIR)
    except OSError as e:
        msg = f"cannot read run folder {root}: {e.strerror or e} (a link is never followed)"
        raise MirrorError(msg) from e
    out: list[SourceEntry] = []
    budget = [2 * limits.max_files + 1000]
    try:
        _scan_dir(root_fd, (), out, budget, limits)
    finally:
        os.close(root_fd)
    return out, budget[0] < 0


def _scan_dir(
    fd: int,
    prefix: tuple[bytes, ...],
    out: list[SourceEntry],
    budget: list[int],
    limits: MirrorLimits,
) -> None:
    with os.scandir(fd) as listing:
        found = sorted(listing, key=lambda e: os.fsencode(e.name))
    for item in found:
        budget[0] -= 1
        if budget[0] < 0:
            return
        name = os.fsencode(item.name)
        parts = (*prefix, name)
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue  # gone since the listing
        kind = entry_type(st.st_mode, st.st_nlink)
        target = None
        if kind == "symlink":
            try:
                target = os.fsencode(os.readlink(item.name, dir_fd=fd))
            except OSError:
                target = None
        out.append(SourceEntry(parts, kind, st.st_size, st.st_dev, st.st_ino, target))
        if kind != "dir" or len(parts) > limits.max_depth or bad_name(name, limits):
            continue
        child = open_dir_nofollow(fd, item.name, (st.st_dev, st.st_ino))
        if child is not None:
            try:
                _scan_dir(child, parts, out, budget, limits)
            finally:
                os.close(child)


@dataclass(slots=True)
class _Level:
    parts: tuple[bytes, ...]
    src: int
    dst: int


@dataclass(slots=True)
class _Copy:
    files: list[FileRecord]
    skipped: list[Skipped]
    budget: int
    truncated: bool = False


def execute_plan(
    src_root: Path, dest_parent_fd: int, dest_name: str, plan: MirrorPlan, limits: MirrorLimits
) -> MirrorReport:
    """Copy what ``plan`` says from ``src_root`` into a new folder ``dest_name`` of a folder.

    Every file and folder written is fsynced. On an error the new folder is left for the caller
    to remove.

    Args:
        src_root: The listed folder.
        dest_parent_fd: Descriptor of the folder to create ``dest_name`` in.
        dest_name: The new folder (it must not exist).
        plan: From :func:`srez_client.transfer.plan.plan_entries` over ``src_root``'s listing.
        limits: The caps (bytes are counted again while reading: a file may have grown).

    Returns:
        What was copied and skipped (the plan's skips first).

    Raises:
        FileExistsError: If ``dest_name`` exists.
        MirrorError: If ``src_root`` cannot be opened.
        OSError: If writing fails (disk full ...).
    """
    os.mkdir(dest_name, 0o755, dir_fd=dest_parent_fd)
    dst_root = os.open(dest_name, O_DIR, dir_fd=dest_parent_fd)
    try:
        src_root_fd = os.open(src_root, O_DIR)
    except OSError as e:
        os.close(dst_root)
        msg = f"cannot read run folder {src_root}: {e.strerror or e}"
        raise MirrorError(msg) from e
    state = _Copy([], list(plan.skipped), limits.max_total_bytes, plan.truncated)
    stack = [_Level((), src_root_fd, dst_root)]
    failed: set[tuple[bytes, ...]] = set()
    try:
        for entry in plan.entries:
            parts = entry.parts
            if any(parts[:i] in failed for i in range(1, len(parts))):
                state.skipped.append(Skipped(parts, entry.type, "changed"))
                continue
            if not any(level.parts == parts[:-1] for level in stack):
                state.skipped.append(Skipped(parts, entry.type, "bad_parent"))
                continue  # not a plan of plan_entries: its folder is not open here
            while stack[-1].parts != parts[:-1]:
                _close_level(stack.pop())
            level = stack[-1]
            name = os.fsdecode(parts[-1])
            if entry.type == "dir":
                src = open_dir_nofollow(level.src, name, (entry.dev, entry.ino))
                if src is None:
                    failed.add(parts)
                    state.skipped.append(Skipped(parts, "dir", "changed"))
                    continue
                os.mkdir(name, 0o755, dir_fd=level.dst)
                stack.append(_Level(parts, src, os.open(name, O_DIR, dir_fd=level.dst)))
            else:
                _copy_file(level, name, entry, limits, state)
    finally:
        while stack:
            _close_level(stack.pop())
    return MirrorReport(tuple(state.files), tuple(state.skipped), state.truncated)


def _close_level(level: _Level) -> None:
    try:
        os.fsync(level.dst)
    finally:
        os.close(level.dst)
        os.close(level.src)


def _copy_file(
    level: _Level, name: str, entry: SourceEntry, limits: MirrorLimits, state: _Copy
) -> None:
    src = open_regular(level.src, name, (entry.dev, entry.ino))
    if isinstance(src, str):
        state.skipped.append(Skipped(entry.parts, entry.type, src))
        return
    own_cap = file_cap(entry.parts, limits)
    # the run's record is copied whatever the total budget (srez_client.transfer.plan.RECORD_FILES)
    cap = own_cap if entry.parts in RECORD_FILES else min(own_cap, state.budget)
    try:
        written = write_new_file(level.dst, name, lambda n: os.read(src, n), cap)
    finally:
        os.close(src)
    if written is None:  # it grew past a cap since the listing: dropped
        reason: SkipReason = "too_large" if cap == own_cap else "total_cap"
        state.skipped.append(Skipped(entry.parts, entry.type, reason))
        state.truncated = True
        return
    size, sha256 = written
    state.budget = max(0, state.budget - size)
    path = escape_bytes(b"/".join(entry.parts))
    state.files.append(FileRecord(path=path, size=size, sha256=sha256))


def write_new_file(
    dir_fd: int, name: str, read: Callable[[int], bytes], cap: int
) -> tuple[int, str] | None:
    """Create ``name`` under ``dir_fd`` and fill it from ``read`` until it returns ``b""``.

    The file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (never through a link, never over
    an existing name) and fsynced. The one write path of every mirror and copy-out.

    Args:
        dir_fd: The folder (one this process made).
        name: One name component.
        read: Returns up to n bytes, ``b""`` at the end.
        cap: Most bytes kept; a source with more is dropped.

    Returns:
        (size, sha256 hex) of what was written, or None if the source passed ``cap`` (the new
        file is removed).

    Raises:
        FileExistsError: If ``name`` exists.
        OSError: If writing fails. Whatever ``read`` raises propagates; either way the new file
            is removed first.
    """
    digest = hashlib.sha256()
    size = 0
    out = os.open(name, _O_CREATE, 0o644, dir_fd=dir_fd)
    try:
        while chunk := read(_CHUNK):
            size += len(chunk)
            if size > cap:
                break
            digest.update(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]
        if size <= cap:
            os.fsync(out)
    except BaseException:
        os.unlink(name, dir_fd=dir_fd)  # a source that failed half-way leaves no partial file
        raise
    finally:
        os.close(out)
    if size > cap:
        os.unlink(name, dir_fd=dir_fd)
        return None
    return size, digest.hexdigest()
