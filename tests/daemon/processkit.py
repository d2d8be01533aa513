"""Watching processes from tests: the ones a test marked, a condition awaited with a deadline,
and what a fresh interpreter loads for an import."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable

import psutil


def marked(marker: str) -> list[psutil.Process]:
    """Live processes anywhere on the machine whose command line contains ``marker``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and marker in (proc.info["cmdline"] or []):
            found.append(proc)
    return found


async def wait_for(check: Callable[[], bool], within_s: float) -> float:
    """Seconds until ``check()`` holds; fails after ``within_s``."""
    start = time.perf_counter()
    async with asyncio.timeout(within_s):
        while True:
            if check():
                return time.perf_counter() - start
            await asyncio.sleep(0.02)


def loaded_by(module: str, watched: Iterable[str]) -> list[str]:
    """Which of the ``watched`` modules a fresh interpreter has loaded once it imported
    ``module`` (what a cheap import must not pull in)."""
    code = (
        f"import json, sys, {module}; "
        f"print(json.dumps([m for m in {sorted(watched)!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found: list[str] = json.loads(done.stdout)
    return found
