"""The run's config files against those at the incident's start, computed from the texts in memory.

One :class:`WorldFiles` is the whole truth about what the agent changed at one moment: the live
diff (``GET /api/diff``), the changed files (``GET /api/files`` and the stream's diff frame) and,
once the agent phase is over, ``final.patch`` all read it, never the ``world/`` files on disk
(which exist for a person in the pty to read, and which that person could edit).
:func:`similarity` compares the agent's diff with the reference patch. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from srez_daemon.protocol.api import FileChange, Similarity
from srez_daemon.record.patch_keys import compare_keys
from srez_env.grade import unified_diff_texts
from srez_env.world import topology as topo


@dataclass(frozen=True, slots=True)
class WorldFiles:
    """The config files at one moment and what changed in them since the incident started."""

    texts: Mapping[str, str]
    """Service -> the text of its config file now."""
    diff: str
    """Every change since the incident started, one unified diff per changed file."""
    files: tuple[FileChange, ...]
    """The changed files with their added and removed line counts."""

    @classmethod
    def between(cls, initial: Mapping[str, str], current: Mapping[str, str]) -> WorldFiles:
        """The files ``current`` against ``initial`` (the configs at the incident's start)."""
        texts = dict(current)
        return cls(texts, unified_diff_texts(initial, texts), tuple(file_changes(initial, texts)))

    def rewritten(self, before: WorldFiles) -> dict[str, str]:
        """Service -> new text, for each file that differs from ``before``."""
        return {s: t for s, t in self.texts.items() if before.texts.get(s) != t}


def file_changes(initial: Mapping[str, str], current: Mapping[str, str]) -> list[FileChange]:
    """Changed files with added and removed line counts (status M; A/D when a file appears or
    disappears)."""
    out = []
    for s in topo.SERVICES:
        a, b = initial.get(s, ""), current.get(s, "")
        if a == b:
            continue
        import difflib  # once a file changed: a daemon at rest does not load it

        added = removed = 0
        for line in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif line.startswith("-") and not line.startswith("---"):
                removed += 1
        status = "A" if not a else "D" if not b else "M"
        out.append(FileChange(path=f"{s}/{s}.conf", status=status, added=added, removed=removed))
    return out


_SPACE = re.compile(r"\s+")


def _changed_lines(patch: str) -> Counter[str]:
    lines: Counter[str] = Counter()
    for line in patch.splitlines():
        if line.startswith(("+++", "---")) or not line.startswith(("+", "-")):
            continue
        lines[line[0] + _SPACE.sub(" ", line[1:].strip())] += 1
    return lines


def similarity(agent_patch: str, reference_patch: str) -> Similarity:
    """Share of changed lines the two diffs have in common (multiset Jaccard, whitespace-
    normalised; 1.0 when both change nothing), and how the config keys they change compare."""
    a, b = _changed_lines(agent_patch), _changed_lines(reference_patch)
    common = sum((a & b).values())
    union = sum((a | b).values())
    keys = compare_keys(agent_patch, reference_patch)
    return Similarity(
        similarity=round(common / union, 6) if union else 1.0,
        agent_lines=sum(a.values()),
        reference_lines=sum(b.values()),
        common_lines=common,
        same_keys=keys.same,
        other_values=keys.other_values,
        agent_only_keys=keys.agent_only,
        reference_only_keys=keys.reference_only,
    )
