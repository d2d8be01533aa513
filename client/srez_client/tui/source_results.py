"""A finished run read from its results folder, with no daemon (docs/design.md §7).

Files are opened without following links (a results folder is written from a run's files, which
are untrusted), read in a worker thread, and parsed with the tolerant dialog reader, so a torn or
hostile ``dialog.jsonl`` becomes error entries, never a crash.
"""

from __future__ import annotations

import asyncio
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import orjson

from srez_client.transfer.fs import read_range, read_range_head, read_small_file
from srez_client.tui.source import DialogBatch, RunMeta, RunSource, SourceEvent, SourceUnavailable
from srez_daemon.protocol import iter_dialog
from srez_daemon.protocol.api import PhaseFrame

SMALL: Final = 16 << 20
"""Largest JSON file or patch read (16 MiB)."""
DIALOG_MAX: Final = 1 << 30
DIALOG_VIEW_MAX: Final = 8 << 20
"""The newest bytes of a dialog that a viewer folds: a dialog may be as large as its run made it
(or a planted one, larger), and the viewers' memory stays bounded; the file downloads whole."""
DIFF_VIEW_MAX: Final = 1 << 20
"""The first bytes of a patch that a viewer parses (a real fix is a few lines; the file downloads
whole)."""
"""Largest dialog read (1 GiB)."""
BATCH: Final = 2000
"""Dialog entries per batch."""
LOG_NAMES: Final = ("agent", "evaluator", "daemon", "container")


def read_file(folder: Path, name: str, limit: int = SMALL) -> bytes | None:
    """A regular file of the folder (not a link), or None."""
    return read_small_file(folder, name.encode(), limit)


def read_json(folder: Path, name: str) -> dict[str, Any] | None:
    """A JSON object file, or None (missing, a link, not an object)."""
    data = read_file(folder, name)
    if data is None:
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _similarity(agent: str, reference: str) -> float:
    from srez_daemon.record.world import similarity  # the simulator's modules: only when asked

    return similarity(agent, reference).similarity


class FinishedRunSource(RunSource):
    """A results folder ``<root>/<task>/<model>/<agent>/<run-id>/``."""

    live = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self.run_id = path.name
        self.skipped = 0
        """Bytes at the start of the dialog not read (it is longer than :data:`DIALOG_VIEW_MAX`)."""

    async def _json(self, name: str) -> dict[str, Any]:
        value = await asyncio.to_thread(read_json, self.path, name)
        if value is None:
            msg = f"{name} is missing from {self.path}"
            raise SourceUnavailable(msg)
        return value

    async def _text(self, name: str) -> str:
        data = await asyncio.to_thread(read_file, self.path, name)
        if data is None:
            msg = f"{name} is missing from {self.path}"
            raise SourceUnavailable(msg)
        return data.decode("utf-8", "replace")

    async def meta(self) -> RunMeta:
        run = await asyncio.to_thread(read_json, self.path, "run.json") or {}
        grade = await asyncio.to_thread(read_json, self.path, "result.json") or {}
        summary = await asyncio.to_thread(read_json, self.path, "summary.json") or {}
        settings: dict[str, str] = {
            k: str(run[k]) for k in ("agent_spec", "run_seed", "backend", "started_at") if k in run
        }
        settings["results"] = str(self.path)
        steps, budget = grade.get("steps", summary.get("steps")), grade.get("max_steps")
        return RunMeta(
            run_id=str(run.get("run_id", self.run_id)),
            task_id=str(run.get("task_id", summary.get("task_id", ""))),
            difficulty=str(grade.get("difficulty", "")),
            model=str(run.get("model", summary.get("model", ""))),
            agent=str(run.get("agent", summary.get("agent", ""))),
            backend=str(run.get("backend", "")),
            phase="finished",
            version=str(run.get("srez_version", "")),
            steps_used=steps if isinstance(steps, int) else None,
            step_budget=budget if isinstance(budget, int) else None,
            settings=settings,
        )

    async def events(self) -> AsyncIterator[SourceEvent]:
        found = await asyncio.to_thread(
            read_range, self.path / "archive", "dialog.jsonl", None, DIALOG_VIEW_MAX
        )
        if found is None:
            msg = f"archive/dialog.jsonl is missing from {self.path}"
            raise SourceUnavailable(msg)
        data, start, _ = found
        if start:  # the newest DIALOG_VIEW_MAX bytes, from the first whole line among them
            cut = data.find(b"\n") + 1
            self.skipped, data = start + cut, data[cut:]
        entries = await asyncio.to_thread(lambda: list(iter_dialog(data, final=True)))
        for start in range(0, len(entries), BATCH):
            yield DialogBatch(entries[start : start + BATCH])
            await asyncio.sleep(0)  # let keys through between batches
        yield PhaseFrame(phase="done")

    async def diff(self) -> str:
        return await self._text("final.patch")

    async def diff_head(self, most: int) -> tuple[str, int]:
        found = await asyncio.to_thread(read_range_head, self.path, "final.patch", most)
        if found is None:
            msg = f"final.patch is missing from {self.path}"
            raise SourceUnavailable(msg)
        data, size = found
        if len(data) < size:  # cut before the last file that did not fit whole
            cut = data.rfind(b"\n--- ")
            data = data[: cut + 1] if cut >= 0 else b""
        return data.decode("utf-8", "replace"), size - len(data)

    async def reference(self) -> tuple[str, float | None]:
        reference = await self._text("reference.patch")
        try:  # a patch far larger than any fix is compared by its head: similarity is a hint
            agent, _ = await self.diff_head(DIFF_VIEW_MAX)
        except SourceUnavailable:
            agent = ""
        return reference, await asyncio.to_thread(_similarity, agent, reference)

    async def grade(self) -> dict[str, Any]:
        return await self._json("result.json")

    async def summary(self) -> dict[str, Any]:
        return await self._json("summary.json")

    def log_names(self) -> list[str]:
        """The logs present as regular files: a link is no log (following it would tell
        whoever planted it whether its target exists)."""
        return [n for n in LOG_NAMES if _regular(self.path / "logs" / f"{n}.log")]

    async def logs(self, name: str, *, follow: bool) -> AsyncIterator[str]:
        data = await asyncio.to_thread(read_file, self.path / "logs", f"{name}.log", DIALOG_MAX)
        if data:
            yield data.decode("utf-8", "replace")

    async def dialog_bytes(self) -> bytes:
        data = await asyncio.to_thread(read_file, self.path / "archive", "dialog.jsonl", DIALOG_MAX)
        if data is None:
            msg = f"archive/dialog.jsonl is missing from {self.path}"
            raise SourceUnavailable(msg)
        return data


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file in a real folder, no link followed at either (the run
    folder above them was found without following links)."""
    try:
        return stat.S_ISDIR(path.parent.lstat().st_mode) and stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False
