"""Atomic writes: a file is always its old or its new version, never a mix.

A write goes to a temp file in the same folder, is fsynced, renamed over the target, and the folder
is fsynced. ``sync=False`` keeps the rename but skips the flushes, for files written inside a folder
that is itself made durable as a whole before it counts (:func:`fsync_tree`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

if TYPE_CHECKING:  # imported lazily: atomic writes must not pull in pydantic
    from pydantic import BaseModel


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


def fsync_tree(root: Path) -> bool:
    """Flush every file and folder under ``root`` (``root`` included) to disk, at once.

    On Linux this is one ``syncfs(2)`` of the file system holding ``root``: a single flush (one
    journal commit) instead of an fsync per file and folder, which costs a commit each (a run
    folder holds about twenty). Elsewhere each file, then each folder (deepest first), is
    fsynced.

    Returns:
        True when the whole file system holding ``root`` was flushed (``syncfs``), so every other
        folder on it written before the call is flushed too.
    """
    if _syncfs(root):
        return True
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
    return False


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


@contextlib.contextmanager
def naming(path: Path) -> Iterator[None]:
    """An ``OSError`` raised inside without a file name (a ``write`` or an ``fsync`` that found
    the device full) is raised again naming ``path``: the one line a user reads says where."""
    try:
        yield
    except OSError as e:
        if e.filename is not None or e.errno is None:
            raise
        raise OSError(e.errno, e.strerror, str(path)) from e


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
        with naming(path), os.fdopen(fd, "wb") as f:
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
