"""A small tmpfs for the full-disk tests (as root, as the suite runs here and in CI)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (made here) for the block; skips where none can
    be mounted, fails instead with ``REQUIRE_TMPFS=1``."""
    where.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as e:
        if os.environ.get("REQUIRE_TMPFS") == "1":
            raise
        pytest.skip(f"cannot mount a tmpfs here ({e}); REQUIRE_TMPFS=1 makes this a failure")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
