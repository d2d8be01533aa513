"""The Recent tab's memory: the last ten runs attached, in ``$SREZ_STATE/tui-recent.json``,
written atomically (a crash leaves the old list or the new one, never half of one)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import orjson

from srez_client.tui.viewmodels.attach_list import RECENT_MAX, push_recent
from srez_core.atomic import atomic_write_json

RECENT_FILE: Final = "tui-recent.json"


def load_recent(state_dir: Path) -> list[str]:
    """The recent run ids, most recent first ([] if none or unreadable)."""
    try:
        value = orjson.loads((state_dir / RECENT_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return []
    items = value.get("recent") if isinstance(value, dict) else None
    if not isinstance(items, list):
        return []
    return [str(i) for i in items if isinstance(i, str)][:RECENT_MAX]


def remember(state_dir: Path, run_id: str) -> list[str]:
    """Put ``run_id`` first in the file; returns the new list."""
    recent = push_recent(load_recent(state_dir), run_id)
    try:
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write_json(state_dir / RECENT_FILE, {"recent": recent})
    except OSError:
        pass  # a read-only state folder costs the Recent tab, not the viewer
    return recent
