"""The live monitor's file reading: log tails that follow, evidence from ``result.json``.

Everything here blocks (small reads, ``stat``) and is meant to run through ``asyncio.to_thread``
once per poll, so the urwid loop never waits on the disk. Polling (not inotify) because the
monitor refreshes at a human pace (~0.7 s) and the files it reads are replaced atomically
(``os.replace``), which silences a file watch for good (watchfiles loses the file).
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import Final

import orjson

from srez_client.tui.dashboard.monitor_model import TAIL_LINES, Evidence, MonitorData
from srez_client.tui.dashboard.source import ManagedSource

FIRST_READ: Final = 64 * 1024
"""On first sight of a log, only its last 64 KiB are read (the tail, not the history)."""
MAX_READ: Final = 1024 * 1024
"""At most this much is read per poll; a flood is skipped, not buffered."""


class FileTail:
    """The last lines of a growing file, surviving truncation and replacement.

    Keeps (inode, offset): a new inode or a size below the offset starts over; a partial last
    line waits for its newline.
    """

    def __init__(self, path: Path, keep: int = TAIL_LINES) -> None:
        """Follow ``path`` (it may not exist yet)."""
        self.path = path
        self.lines: deque[str] = deque(maxlen=keep)
        self._inode: int | None = None
        self._offset = 0
        self._partial = b""
        self._mid_line = False

    def poll(self) -> bool:
        """Reads what was appended since the last poll; True when lines changed."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if st.st_ino != self._inode or st.st_size < self._offset:
                fresh = self._inode is None
                self._inode, self._partial = st.st_ino, b""
                self._offset = max(0, st.st_size - FIRST_READ) if fresh else 0
                self._mid_line = fresh and self._offset > 0
                if not fresh:
                    self.lines.append("--- log replaced or truncated ---")
            if st.st_size - self._offset > MAX_READ:
                self.lines.append(f"--- {st.st_size - self._offset - MAX_READ} bytes skipped ---")
                self._offset, self._partial = st.st_size - MAX_READ, b""
                self._mid_line = True
            data = os.pread(fd, st.st_size - self._offset, self._offset)
        finally:
            os.close(fd)
        if not data:
            return False
        start_mid_line, self._mid_line = self._mid_line, False
        self._offset += len(data)
        *complete, self._partial = (self._partial + data).split(b"\n")
        if start_mid_line:  # the read began inside a line: drop that line's end
            if complete:
                complete = complete[1:]
            else:
                self._mid_line = True
        self.lines.extend(line.decode("utf-8", "replace").rstrip("\r") for line in complete)
        return bool(complete)

    def tail(self) -> tuple[str, ...]:
        """The kept lines, the partial last one included (raw: sanitise before display)."""
        partial = (self._partial.decode("utf-8", "replace"),) if self._partial else ()
        return (*self.lines, *partial)


def read_evidence(results_dir: Path) -> Evidence | None:
    """Witnessed and required evidence of a graded run, from its ``result.json``."""
    try:
        fd = os.open(results_dir / "result.json", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            grade = orjson.loads(f.read(8 * 1024 * 1024))
        witnessed = grade["metrics"]["evidence_witnessed"]
        required = grade["ground_truth"]["required_evidence"]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if not isinstance(witnessed, list) or not isinstance(required, list):
        return None
    return Evidence(
        witnessed=len(set(map(str, witnessed)) & set(map(str, required))), required=len(required)
    )


class MonitorPoller:
    """Reads everything one monitor shows; one instance per open monitor."""

    def __init__(self, source: ManagedSource, run: str, target: str, folder: Path) -> None:
        """Poll target ``target`` of run ``run`` whose folder is ``folder``."""
        self.source = source
        self.run = run
        self.target = target
        target_dir = folder / "targets" / target
        self.console = FileTail(target_dir / "console.log")
        self.runner_log = FileTail(target_dir / "runner.log")
        self._evidence: dict[tuple[str, str | None], Evidence] = {}

    def poll(self) -> MonitorData:
        """One snapshot (blocking). Problems become :attr:`MonitorData.problem`, never raised."""
        ended = tuple(self.source.ended_launches())  # reaps a runner that exited meanwhile
        try:
            status = self.source.status(self.run)
        except (LookupError, ValueError, OSError) as e:
            problem = f"cannot read managed run {self.run!r}: {e}"
            return MonitorData(None, problem=problem, ended=ended)
        self.console.poll()
        self.runner_log.poll()
        evidence: dict[str, Evidence] = {}
        for record in status.checkpoint(self.target).tasks.values():
            if record.status != "completed" or not record.results_dir:
                continue
            key = (record.results_dir, record.result_sha256)
            if key not in self._evidence:
                found = read_evidence(Path(record.results_dir))
                if found is None:
                    continue
                self._evidence[key] = found
            evidence[record.task_id] = self._evidence[key]
        return MonitorData(
            status,
            evidence=evidence,
            console=self.console.tail(),
            runner_log=self.runner_log.tail(),
            ended=ended,
        )


__all__ = ["FIRST_READ", "MAX_READ", "FileTail", "MonitorPoller", "read_evidence"]
