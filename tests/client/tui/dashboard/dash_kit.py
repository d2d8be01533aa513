"""Test doubles and builders for the dashboard tests: a fake Shell that keeps a screen stack and
runs spawned coroutines on the test's loop, key typing by name, and real managed-run folders."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import orjson

from srez_client.managed import api
from srez_client.managed.models import Checkpoint, TaskRecord, make_target
from srez_client.managed.store import ManagedPaths, save_checkpoint
from srez_client.tui.dashboard.widgets import render_text
from srez_core.aio import spawn

SIZE = (120, 40)


class FakeShell:
    """Implements the Shell protocol: a stack of screens, notes, opened runs, spawned tasks."""

    def __init__(self, results_root: Path, state_dir: Path) -> None:
        self.results_root = results_root
        self.state_dir = state_dir
        self.stack: list[tuple[Any, str]] = []
        self.notes: list[str] = []
        self.opened: list[str] = []
        self.tasks: list[asyncio.Task[Any]] = []
        self.quitted = False

    # -- the protocol ------------------------------------------------------------------
    def push(self, widget: Any, title: str) -> None:
        self.stack.append((widget, title))

    def pop(self) -> None:
        self.stack.pop()
        if not self.stack:
            self.quit()

    def close(self, widget: Any) -> None:
        self.stack = [entry for entry in self.stack if entry[0] is not widget]
        if not self.stack:
            self.quit()

    def open_run(self, run_ref: str) -> None:
        self.opened.append(run_ref)

    def notify(self, message: str) -> None:
        self.notes.append(message)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        self.tasks.append(spawn(coro, name=name))

    def redraw(self) -> None:
        if self.stack:  # like the real loop: only the top screen is drawn
            self.top.render(SIZE, focus=True)

    def quit(self) -> None:
        self.quitted = True

    # -- driving -----------------------------------------------------------------------
    @property
    def top(self) -> Any:
        return self.stack[-1][0]

    def press(self, *keys: str) -> list[str]:
        """Presses urwid key names on the top screen; returns those it did not handle."""
        return [key for key in keys if self.top.keypress(SIZE, key) is not None]

    def write(self, text: str) -> None:
        """Types ``text`` one character at a time."""
        self.press(*text)

    def screen(self) -> str:
        return render_text(self.top, SIZE)

    async def settle(self, limit: float = 10.0) -> None:
        """Waits for every spawned task but the pollers (which run while their screen shows)."""
        async with asyncio.timeout(limit):
            while True:
                busy = [t for t in self.tasks if not t.done() and not _is_poller(t)]
                if not busy:
                    return
                await asyncio.wait(busy)

    async def until(self, check: Callable[[], bool], limit: float = 10.0) -> None:
        """Redraws and polls ``check`` until it holds (the deadline fails the test)."""
        async with asyncio.timeout(limit):
            while not check():
                self.redraw()
                await asyncio.sleep(0.05)

    async def shutdown(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def _is_poller(task: asyncio.Task[Any]) -> bool:
    return task.get_coro().__qualname__ == "ShownPoller._loop"  # type: ignore[union-attr]


async def eventually(check: Callable[[], bool], limit: float = 10.0) -> None:
    """Waits until ``check`` holds (the deadline fails the test)."""
    async with asyncio.timeout(limit):
        while True:
            if check():
                return
            await asyncio.sleep(0.05)


def make_run(
    results: Path,
    name: str = "demo",
    *,
    tasks: tuple[str, ...] = ("sre-001", "sre-002", "sre-003"),
    models: tuple[str, ...] = ("openai/gpt-4o",),
    budget: float | None = None,
) -> Path:
    """A managed run made with the real API; its folder."""
    targets = [make_target("scripted")] + [make_target("llm", m) for m in models]
    api.create_managed(
        results,
        name,
        targets=targets,
        tasks=list(tasks),
        backend="inline",
        daily_budget_usd=budget,
        cost_cap_usd=0.5 if budget is not None else None,
    )
    return ManagedPaths.of(results, name).root


def graded_folder(results: Path, task: str, witnessed: list[str], required: list[str]) -> Path:
    """A results folder holding just the part of ``result.json`` the monitor reads."""
    folder = (
        results / task / "none" / "scripted" / f"20260101T000000Z-{abs(hash(task)) % 10**8:08d}"
    )
    folder.mkdir(parents=True)
    grade = {
        "metrics": {"evidence_witnessed": witnessed},
        "ground_truth": {"required_evidence": required},
    }
    (folder / "result.json").write_bytes(orjson.dumps(grade))
    return folder


def record(task: str, status: str = "completed", **fields: Any) -> TaskRecord:
    return TaskRecord(
        task_id=task, attempt=1, status=status, started_at="2026-01-01T00:00:00.000Z", **fields
    )  # type: ignore[arg-type]


def checkpoint(results: Path, name: str, target: str, *records: TaskRecord) -> None:
    cp = Checkpoint(target=target, tasks={r.task_id: r for r in records})
    save_checkpoint(ManagedPaths.of(results, name), cp)


def env_for(tmp: Path) -> dict[str, str]:
    """An environment whose state, results and catalogue are all under ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SREZ_")}
    env.update(SREZ_STATE=str(tmp / "state"), SREZ_RESULTS=str(tmp / "results"))
    return env
