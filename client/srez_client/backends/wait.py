"""Waiting for a run to finish, as the backends with a process do (by polling their own state)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from srez_client.backends.base import RunHandle, not_found


async def poll_until_finished(
    backend: str,
    run_id: str,
    probe: Callable[[], Awaitable[RunHandle | None]],
    timeout_s: float | None,
    *,
    first_delay_s: float,
    max_delay_s: float,
) -> RunHandle:
    """Polls ``probe`` (None: the run is gone) until the run finished or stopped running.

    Raises:
        RunNotFoundError: If the run disappeared.
        TimeoutError: If ``timeout_s`` passed first.
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout_s is None else loop.time() + timeout_s
    delay = first_delay_s
    while True:
        handle = await probe()
        if handle is None:
            raise not_found(backend, run_id)
        if handle.finished or handle.status != "running":
            return handle
        if deadline is not None and loop.time() >= deadline:
            msg = f"run {run_id} did not finish within {timeout_s:g} s"
            raise TimeoutError(msg)
        await asyncio.sleep(delay)
        delay = min(delay * 2, max_delay_s)
