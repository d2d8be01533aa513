"""A full disk, said where (docs/security.md test 57): which folder's device is full, how much
is free there, and what the user does next, in the one line an error gets."""

from __future__ import annotations

import contextlib
import errno
import shutil
from pathlib import Path
from typing import Final

NO_SPACE: Final = frozenset({errno.ENOSPC, errno.EDQUOT})
"""No space, or no quota, left on a device."""


def is_no_space(error: BaseException | None) -> bool:
    """Whether ``error``, or the error it was raised from, is a full device."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in NO_SPACE:
            return True
        error = error.__cause__
    return False


def free_bytes(folder: Path) -> int:
    """The free bytes of ``folder``'s device (of its nearest existing parent; 0 if none)."""
    for candidate in (folder, *folder.parents):
        with contextlib.suppress(OSError):
            return shutil.disk_usage(candidate).free
    return 0


def full_folder(error: BaseException, fallback: Path) -> Path:
    """The folder whose device was full: that of the file ``error`` names, else ``fallback``."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in NO_SPACE and seen.filename:
            named = Path(str(seen.filename))
            return named if named.is_dir() else named.parent
        seen = seen.__cause__
    return fallback


def no_space_line(error: BaseException, fallback: Path, roots: tuple[Path, ...] = ()) -> str:
    """``no space left on the device of FOLDER (N bytes free)``; a folder inside one of
    ``roots`` (the results folder, say) is named by that root, the folder the user knows."""
    folder = full_folder(error, fallback)
    folder = next((root for root in roots if folder.is_relative_to(root)), folder)
    return f"no space left on the device of {folder} ({free_bytes(folder)} bytes free)"
