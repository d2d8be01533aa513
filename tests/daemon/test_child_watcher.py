"""The daemon learns of its subprocesses' exits through pidfds (srez_core.aio), not a thread per
subprocess: 200 execs start no thread, and every exit is still seen."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 watches by pidfd")

PROGRAM = """
import asyncio, sys, threading
from srez_core.aio import watch_children_by_pidfd

async def main(pidfd):
    if pidfd:
        assert watch_children_by_pidfd()
    before = threading.active_count()
    async def one(i):
        p = await asyncio.create_subprocess_exec("sh", "-c", f"sleep 0.1; exit {i % 7}")
        return p, threading.active_count()
    started = await asyncio.gather(*(one(i) for i in range(200)))
    codes = [await p.wait() for p, _ in started]
    assert codes == [i % 7 for i in range(200)], codes
    print(max(n for _, n in started) - before)

asyncio.run(main(sys.argv[1] == "pidfd"))
"""


def threads_started(mode: str) -> int:
    # a fresh interpreter each: the child watcher is process-wide state
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROGRAM), mode],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_subprocess_exits_are_seen_without_a_thread_each() -> None:
    assert threads_started("pidfd") == 0


def test_the_default_watcher_starts_a_thread_each() -> None:
    """The reference, so the test above can fail: 3.11's default waits in a thread each."""
    assert threads_started("default") >= 10
