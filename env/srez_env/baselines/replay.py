"""Replays a JSONL file of ``{"tool": ..., "args": ...}`` lines, then submits."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from srez_env.baselines.policy import SUBMIT
from srez_env.errors import ReplayError


def load_replay(path: Path) -> list[dict[str, Any]]:
    """Reads and checks a replay file; blank lines and ``#`` comments are skipped.

    Raises:
        ReplayError: naming the file and line of the first bad line, or a file with no action.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        msg = f"{path}: cannot read the replay file: {e.strerror}"
        raise ReplayError(msg) from e
    except UnicodeDecodeError as e:
        msg = f"{path}: the replay file is not UTF-8 text"
        raise ReplayError(msg) from e
    actions = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            action = json.loads(line)
        except json.JSONDecodeError as e:
            msg = f'{path}:{number}: not valid JSON ({e.msg}); each line must be one object like {{"tool": "get_alerts", "args": {{}}}}'
            raise ReplayError(msg) from e
        if not isinstance(action, dict) or not isinstance(action.get("tool"), str):
            msg = f'{path}:{number}: each line must be an object with a string "tool" and an object "args"'
            raise ReplayError(msg)
        if not isinstance(action.get("args", {}), dict) or set(action) - {"tool", "args"}:
            msg = f'{path}:{number}: only the fields "tool" and "args" (an object) are allowed'
            raise ReplayError(msg)
        actions.append({"tool": action["tool"], "args": action.get("args", {})})
    if not actions:  # most likely the wrong file: a run of nothing but submit is no replay
        msg = f'{path}: the replay file holds no action; write one JSON object per line, like {{"tool": "get_alerts", "args": {{}}}}'
        raise ReplayError(msg)
    return actions


class ReplayAgent:
    """Plays recorded actions in order; submits when they run out."""

    name = "replay"

    def __init__(self, actions: list[dict[str, Any]]) -> None:
        self._actions = list(actions)
        self._next = 0

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        if self._next >= len(self._actions):
            return dict(SUBMIT)
        action = self._actions[self._next]
        self._next += 1
        return action
