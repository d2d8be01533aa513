"""Background tasks that are never garbage-collected mid-flight.

``asyncio.create_task`` keeps only a weak reference to its task; a task nobody holds can vanish.
Every background task of the daemon, and of the client's hosts (the TUI, the managed runner),
starts here, and the set keeps it alive until it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")
_RUNNING: set[asyncio.Task[Any]] = set()


def spawn(coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
    """Starts ``coro`` as a named task and keeps a reference until it finishes; an exception it
    raises is logged (not lost)."""
    task = asyncio.get_running_loop().create_task(coro, name=name)  # noqa: TID251
    _RUNNING.add(task)
    task.add_done_callback(_finished)
    return task


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` and wait until it has ended (None, or a task that already ended, is fine)."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _finished(task: asyncio.Task[Any]) -> None:
    _RUNNING.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.error("background task %s failed", task.get_name(), exc_info=task.exception())


def watch_children_by_pidfd() -> bool:
    """Has the running loop learn of its subprocesses' exits through pidfds (Python 3.11).

    Python 3.11's default child watcher starts a thread per subprocess to wait for it; at
    hundreds of execs a second those threads are a fifth of the daemon's CPU. A pidfd is a file
    descriptor the loop polls with the rest (Linux 5.3 and later), which Python 3.12 makes the
    default. Call it from a coroutine, before the first subprocess. Returns whether pidfds are
    used (False where there are none, or on 3.12 and later, where they already are when they
    exist).
    """
    import sys
    import warnings

    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # a kernel without pidfds, or a sandbox that refuses them
        return False
    watcher = asyncio.PidfdChildWatcher()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.get_event_loop_policy().set_child_watcher(watcher)
    watcher.attach_loop(asyncio.get_running_loop())
    return True
