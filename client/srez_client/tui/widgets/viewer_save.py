"""Saving what the viewer shows: the dialog as ``dialog.jsonl``, the agent's patch as
``patch.diff``, into the working folder or a chosen one. An existing file is never overwritten
without asking; the write is atomic (a reader sees the old file or the new one)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from srez_client.errors import ClientError
from srez_client.tui.shell import Shell
from srez_client.tui.source import RunSource, SourceUnavailable
from srez_client.tui.widgets.dialogs import Choice, Prompt
from srez_core.atomic import atomic_write_bytes


def save_dialog(shell: Shell, source: RunSource) -> None:
    """Ask where, then save the dialog as ``dialog.jsonl``."""
    _ask(shell, "dialog.jsonl", source.dialog_bytes)


def save_patch(shell: Shell, source: RunSource) -> None:
    """Ask where, then save the agent's diff as ``patch.diff``."""

    async def patch() -> bytes:
        return (await source.diff()).encode()

    _ask(shell, "patch.diff", patch)


def _ask(shell: Shell, name: str, read: Callable[[], Awaitable[bytes]]) -> None:
    def answered(folder: str | None) -> None:
        shell.pop()
        if folder is not None:
            target = Path(folder.strip() or ".").expanduser() / name
            shell.spawn(_save(shell, target, read), f"save-{name}")

    shell.push(Prompt(f"Save {name} into folder:", str(Path.cwd()), answered), f"Save {name}")


async def _save(shell: Shell, target: Path, read: Callable[[], Awaitable[bytes]]) -> None:
    try:
        data = await read()
    except (ClientError, SourceUnavailable, OSError) as e:
        shell.notify(f"nothing saved: {e}")
        return
    if not await asyncio.to_thread(target.parent.is_dir):
        shell.notify(f"nothing saved: {target.parent} is not a folder")
        return
    if await asyncio.to_thread(os.path.lexists, target):

        def picked(option: str) -> None:
            shell.pop()
            if option == "Overwrite":
                shell.spawn(_write(shell, target, data), "save-write")
            else:
                shell.notify(f"kept the existing {target}")

        shell.push(
            Choice(f"{target} exists. Overwrite it?", ["Overwrite", "Cancel"], picked), "Overwrite?"
        )
        return
    await _write(shell, target, data)


async def _write(shell: Shell, target: Path, data: bytes) -> None:
    try:
        await asyncio.to_thread(atomic_write_bytes, target, data)
    except OSError as e:
        shell.notify(f"could not write {target}: {e}")
        return
    shell.notify(f"saved {target} ({len(data)} bytes)")
