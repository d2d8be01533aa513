"""Which config keys two diffs of the same files change, and to what. Pure: no I/O.

The similarity of two diffs (:func:`srez_daemon.record.world.similarity`) counts changed *lines*:
an equivalent fix that sets ``pool_max = 27`` where the reference sets ``pool_max = 20`` shares no
line with it. :func:`compare_keys` tells those cases apart: both diffs start from the same files,
so a key is named by its file and the line it sits on in the old file (one ``port`` of one
``[upstream.*]`` section is not another's), and each diff sets it to a value (None: removed).
Lines that are not ``key = value`` (sections, comments) count as keys of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
_KEY_VALUE = re.compile(r"^\s*([^=#;\s][^=]*?)\s*=\s*(.*?)\s*$")

KeyId = tuple[str, int, str]
"""(file, line of the key in the old file, key)."""


@dataclass(frozen=True, slots=True)
class KeyComparison:
    """How the keys two diffs change compare."""

    same: int
    """Keys both change to the same value."""
    other_values: int
    """Keys both change, to different values (same keys, other values)."""
    agent_only: int
    """Keys only the agent's diff changes."""
    reference_only: int
    """Keys only the reference changes."""


def _key(line: str) -> tuple[str, str | None]:
    found = _KEY_VALUE.match(line)
    if found is None:
        return " ".join(line.split()), None
    return found.group(1), " ".join(found.group(2).split())


def key_changes(patch: str) -> dict[KeyId, str | None]:
    """The keys a unified diff changes and the value it leaves each with (None: removed)."""
    out: dict[KeyId, str | None] = {}
    path = ""
    old_line = 0
    removed: list[tuple[int, str]] = []  # this hunk's removed keys not yet paired with an add
    for raw in patch.splitlines():
        if raw.startswith("+++ "):
            path = raw[4:].removeprefix("b/")
            continue
        if raw.startswith("--- "):
            continue
        hunk = _HUNK.match(raw)
        if hunk is not None:
            old_line, removed = int(hunk.group(1)), []
            continue
        if raw.startswith("-"):
            key, _value = _key(raw[1:])
            out[(path, old_line, key)] = None
            removed.append((old_line, key))
            old_line += 1
        elif raw.startswith("+"):
            key, value = _key(raw[1:])
            match = next((i for i, (_, k) in enumerate(removed) if k == key), None)
            if match is None:  # a new line: named by where it goes in the old file
                out[(path, old_line, key)] = value if value is not None else key
            else:
                line, _ = removed.pop(match)
                out[(path, line, key)] = value if value is not None else key
        elif raw.startswith(" ") or raw == "":
            old_line += 1
    return out


def compare_keys(agent_patch: str, reference_patch: str) -> KeyComparison:
    """Count the keys both diffs change alike, both change differently, and either alone."""
    agent, reference = key_changes(agent_patch), key_changes(reference_patch)
    both = agent.keys() & reference.keys()
    same = sum(agent[k] == reference[k] for k in both)
    return KeyComparison(
        same=same,
        other_values=len(both) - same,
        agent_only=len(agent.keys() - both),
        reference_only=len(reference.keys() - both),
    )
