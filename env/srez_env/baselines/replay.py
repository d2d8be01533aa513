"""Replays a JSONL file of ``{"tool": ..., "args": ...}`` lines, then submits."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from srez_env.baselines.policy import SUBMIT
from srez_env.errors import ReplayError

ACTION_MAX: Final = 64 << 10
"""The longest line one action may be (the longest argument an action takes is far shorter)."""


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
            actions.append(parse_action(line))
        except ValueError as e:
            msg = f"{path}:{number}: {e}"
            raise ReplayError(msg) from e
    if not actions:  # most likely the wrong file: a run of nothing but submit is no replay
        msg = f'{path}: the replay file holds no action; write one JSON object per line, like {{"tool": "get_alerts", "args": {{}}}}'
        raise ReplayError(msg)
    return actions


def parse_action(text: str) -> dict[str, Any]:
    """One action written as JSON, ``{"tool": name, "args": {...}}`` (``args`` may be left out):
    a line of a replay file, or a line typed at ``srez play``.

    Raises:
        ValueError: Saying what is wrong, for the caller to say where.
    """
    if len(text) > ACTION_MAX:
        msg = f"the line is {len(text)} characters long; an action takes at most {ACTION_MAX}"
        raise ValueError(msg)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        msg = f'not valid JSON ({e.msg} at column {e.colno}); an action is one object like {{"tool": "get_alerts", "args": {{}}}}'
        raise ValueError(msg) from e
    except RecursionError as e:  # [[[[...: the parser's own depth limit, met before ours
        msg = "the JSON is nested too deeply; an action's arguments are flat (strings and numbers)"
        raise ValueError(msg) from e
    if not isinstance(value, dict) or not isinstance(value.get("tool"), str):
        msg = 'an action is an object with a string "tool" and an object "args"'
        raise ValueError(msg)
    if not isinstance(value.get("args", {}), dict) or set(value) - {"tool", "args"}:
        msg = 'only the fields "tool" and "args" (an object) are allowed'
        raise ValueError(msg)
    return {"tool": value["tool"], "args": value.get("args", {})}


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
