"""Background tasks that are never garbage-collected mid-flight.

``asyncio.create_task`` keeps only a weak reference to its task; a task nobody holds can vanish.
Every background task of the daemon, and of the client's hosts (the TUI, the managed runner),
starts here, and the set keeps it alive until it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
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
