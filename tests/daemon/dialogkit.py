"""Dialog lines for the tail and stream tests: a numbered entry, and appending bytes the way
another writer would (``O_APPEND``, no buffering)."""

from __future__ import annotations

import os
from pathlib import Path

from srez_daemon.protocol import Thinking, encode_entry

TS = "2025-01-01T00:00:00.000Z"


def line(seq: int, text: str | None = None) -> bytes:
    """One encoded ``thinking`` entry: ``entry <seq>`` unless ``text`` is given."""
    return encode_entry(Thinking(seq=seq, ts=TS, text=text if text is not None else f"entry {seq}"))


def append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
