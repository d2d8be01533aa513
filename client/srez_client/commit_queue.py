"""Completing finished run folders behind the next run: several folders, one flush.

``srez eval --backend inline`` plays its runs one after another in one process. Each finished
run folder must be flushed before its rename (:meth:`~srez_client.layout.RunFolder.complete`),
and the flush is a ``syncfs`` of the whole file system: a few hundred microseconds on a quiet
disk, but tens of milliseconds while anything else on the machine writes, and it waited in line
with the simulator. :class:`CommitQueue` takes that wait off the run loop: a background thread
completes the folders handed to it, and every folder that finished while the previous flush was
going goes behind a single next one (group commit).

The durability contract does not change: a folder is renamed to its final name only after a
flush that began once every one of its files was written, so a folder under its final name is
whole. What changes is when: a run is final a flush after it ended, not before the next run
starts. A crash meanwhile (kill -9, power) leaves those runs' ``.partial`` folders, which are
discarded as every partial folder is, and ``--resume`` runs them again. Closing the queue
(leaving its ``with`` block, Ctrl-C included) waits until every folder handed to it is final,
and the thread is not a daemon thread, so an interpreter that exits for any other reason still
completes them first.
"""

from __future__ import annotations

import logging
import queue
import threading
from types import TracebackType
from typing import Self

from srez_client.layout import RunFolder
from srez_core.atomic import fsync_tree

logger = logging.getLogger(__name__)


class CommitQueue:
    """Completes :class:`RunFolder` s written with ``sync=False`` in a background thread.

    Use it as a context manager; :meth:`submit` a folder once its last file is written. An error
    completing a folder (its final name appeared meanwhile: the partial folder is then kept) is
    raised by the next :meth:`submit` or by :meth:`close`, after the other folders completed.
    """

    def __init__(self) -> None:
        self._folders: queue.SimpleQueue[RunFolder | None] = queue.SimpleQueue()
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="srez-commit", daemon=False)
        self._thread.start()
        self._closed = False

    def submit(self, folder: RunFolder) -> None:
        """Hands over a finished folder; it is final once a flush after this call ends."""
        if self._closed:
            msg = "the commit queue is closed"
            raise RuntimeError(msg)
        self._raise_first_error()
        # before the put: a Ctrl-C after it must not discard what the thread renames
        folder.hand_over()
        self._folders.put(folder)

    def close(self) -> None:
        """Waits until every submitted folder is final; raises the first error, if any."""
        if not self._closed:
            self._closed = True
            self._folders.put(None)
        self._thread.join()
        self._raise_first_error()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is None:
            self.close()
            return
        try:  # the runs that ended stay, whatever interrupted the loop
            self.close()
        except Exception:
            logger.exception("completing the finished run folders")

    # ---------------------------------------------------------------- the thread
    def _work(self) -> None:
        closing = False
        while not closing:
            batch = [self._folders.get()]
            while not self._folders.empty():  # everything that finished during the last flush
                batch.append(self._folders.get())
            closing = None in batch
            self._commit([f for f in batch if f is not None])

    def _commit(self, folders: list[RunFolder]) -> None:
        flushed: set[int] = set()
        for folder in folders:
            try:
                device = folder.partial_dir.stat().st_dev
                # one syncfs per file system flushes every folder of the batch on it
                if device not in flushed and fsync_tree(folder.partial_dir):
                    flushed.add(device)
                folder.complete(flushed=True)
            except Exception as e:  # kept for the run loop: one folder never stops the others
                with self._lock:
                    self._errors.append(e)

    def _raise_first_error(self) -> None:
        with self._lock:
            errors, self._errors = self._errors, []
        if errors:
            for extra in errors[1:]:
                logger.error("completing a run folder: %s", extra)
            raise errors[0]
