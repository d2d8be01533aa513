"""What the agent changed, and (once the agent phase is over) what the reference fix changes.

A unified diff is parsed into one :class:`FileCard` per file with its added and removed counts
and its lines, so the Changes tab can show cards (Parsed) or the text as it is (Raw). While the
agent acts only the agent's side exists; when the agent phase ends the model gains the Truth
side (the task's reference fix, shown under a banner saying so) and the Split view, and the
similarity of the two diffs (a text comparison, not a grade) gets a colour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from srez_client.sanitize import sanitize_line
from srez_daemon.record.patch_keys import compare_keys

LineKind = Literal["add", "del", "hunk", "ctx", "meta"]
Side = Literal["agent", "truth", "split"]
Colour = Literal["green", "yellow", "red"]
TRUTH_BANNER: Final = "REFERENCE FIX (the task's ground truth, not the agent's work)"
GREEN_FROM: Final = 0.8
YELLOW_FROM: Final = 0.4


@dataclass(slots=True)
class FileCard:
    """One file of a diff."""

    path: str
    status: str = "M"
    added: int = 0
    removed: int = 0
    lines: list[tuple[LineKind, str]] = field(default_factory=list)


def _path(header: str) -> str:
    name = header[4:].split("\t")[0].strip()
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse_diff(text: str) -> list[FileCard]:
    """Cards from a unified diff (anything before the first ``---``/``+++`` pair is ignored).
    All text is sanitised: a diff carries what the agent wrote into values and file names."""
    cards: list[FileCard] = []
    card: FileCard | None = None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        raw = lines[i]
        if raw.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _path(raw), _path(lines[i + 1])
            status = "A" if old == "/dev/null" else "D" if new == "/dev/null" else "M"
            if status == "M" and old != new:
                status = "R"
            card = FileCard(sanitize_line(old if new == "/dev/null" else new), status)
            cards.append(card)
            i += 2
            continue
        i += 1
        if card is None:
            continue
        line = sanitize_line(raw)
        if raw.startswith("@@"):
            card.lines.append(("hunk", line))
        elif raw.startswith("+"):
            card.added += 1
            card.lines.append(("add", line))
        elif raw.startswith("-"):
            card.removed += 1
            card.lines.append(("del", line))
        elif raw.startswith(("\\", "diff ")):
            card.lines.append(("meta", line))
        else:
            card.lines.append(("ctx", line))
    return cards


def similarity_colour(value: float) -> Colour:
    """Green from 80 %, yellow from 40 %, red below."""
    if value >= GREEN_FROM:
        return "green"
    if value >= YELLOW_FROM:
        return "yellow"
    return "red"


@dataclass(slots=True)
class ChangesModel:
    """The Changes tab's state."""

    agent_diff: str = ""
    reference: str | None = None
    similarity: float | None = None
    agent_over: bool = False
    side: Side = "agent"
    raw: bool = False
    agent_cards: list[FileCard] = field(default_factory=list)
    truth_cards: list[FileCard] = field(default_factory=list)

    def set_agent_diff(self, text: str) -> None:
        """The agent's diff changed (live runs refresh it on every diff frame)."""
        self.agent_diff = text
        self.agent_cards = parse_diff(text)

    def set_reference(self, text: str, similarity: float | None) -> None:
        """The agent phase is over: the reference patch and the similarity arrived."""
        self.reference = text
        self.truth_cards = parse_diff(text)
        self.similarity = similarity
        self.agent_over = True

    def sides(self) -> list[Side]:
        """The views offered now: Agent only until the agent phase ends."""
        return ["agent", "truth", "split"] if self.agent_over else ["agent"]

    def choose(self, side: Side) -> bool:
        """Show ``side`` if it is offered; returns whether it is."""
        if side not in self.sides():
            return False
        self.side = side
        return True

    def toggle_raw(self) -> None:
        """Parsed cards or the raw text."""
        self.raw = not self.raw

    def totals(self, truth: bool = False) -> tuple[int, int, int]:
        """Files, lines added, lines removed of one side."""
        cards = self.truth_cards if truth else self.agent_cards
        return len(cards), sum(c.added for c in cards), sum(c.removed for c in cards)

    def split_pairs(self) -> list[tuple[str, FileCard | None, FileCard | None]]:
        """The Split view's rows: each file either side changed, with the agent's card and the
        reference's card for it side by side (None where that side left the file alone); the
        agent's files first, in its order, then those only the reference changed."""
        truth = {c.path: c for c in self.truth_cards}
        agent_paths = {c.path for c in self.agent_cards}
        rows: list[tuple[str, FileCard | None, FileCard | None]]
        rows = [(c.path, c, truth.get(c.path)) for c in self.agent_cards]
        rows += [(c.path, None, c) for c in self.truth_cards if c.path not in agent_paths]
        return rows

    def similarity_text(self) -> tuple[Colour, str] | None:
        """The similarity, once known: the share of changed lines both diffs have (a coloured
        percentage), then the config keys: set alike, set to other values (same key), changed
        by one side only (other keys); an equivalent fix with another value shares no line."""
        if self.similarity is None:
            return None
        colour = similarity_colour(self.similarity)
        keys = compare_keys(self.agent_diff, self.reference or "")
        other_keys = keys.agent_only + keys.reference_only
        return colour, (
            f"Similarity: {self.similarity * 100:.0f}% of changed lines alike; keys:"
            f" {keys.same} same, {keys.other_values} other value, {other_keys} other keys"
        )
