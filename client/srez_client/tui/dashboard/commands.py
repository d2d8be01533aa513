"""The model picker's typed command mode (``:``), parsed without side effects.

Grammar (case-insensitive verbs, spaces around ``,`` and ``-`` allowed)::

    select SPEC     force the rows of SPEC on
    drop SPEC       force the rows of SPEC off
    SPEC            toggle each row of SPEC
    SPEC := ITEM ("," ITEM)*      ITEM := N | N-M      (1 <= N <= M <= row count)

Row numbers are the ones printed in the picker's left column: global within the current filter
(row 12 is the twelfth row that passes the filter, whatever page it is on), so a command means
the same thing whichever page is showing and whatever the terminal's height.

A command is parsed whole before anything is applied: a single bad item rejects the command,
and the :class:`CommandError` message names the item and says what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

Verb = Literal["select", "drop", "toggle"]

_VERBS: Final[dict[str, Verb]] = {"select": "select", "drop": "drop"}
_ITEM: Final = re.compile(r"^(\d+)(?:\s*-\s*(\d+))?$")
USAGE: Final = "usage: select 1-5 | drop 2,4 | 1-3 (toggle)"


class CommandError(ValueError):
    """A typed command that cannot be applied; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed command: what to do to which rows (1-based, ascending, no repeats)."""

    verb: Verb
    rows: tuple[int, ...]


def parse_command(text: str, row_count: int) -> Command:
    """Parses one typed command against a view of ``row_count`` rows.

    Raises:
        CommandError: For an empty command, an unknown verb, a missing or malformed row spec,
            a backwards range or a row number outside ``1..row_count``.
    """
    words = text.strip().split(None, 1)
    if not words:
        msg = f"empty command; {USAGE}"
        raise CommandError(msg)
    head = words[0].lower()
    if head in _VERBS:
        verb = _VERBS[head]
        spec = words[1] if len(words) > 1 else ""
        if not spec.strip():
            msg = f"{head} needs rows, e.g. '{head} 1-3' or '{head} 2,4'"
            raise CommandError(msg)
    elif head[:1].isdigit():
        verb, spec = "toggle", text
    else:
        msg = f"unknown command {words[0]!r}; {USAGE}"
        raise CommandError(msg)
    return Command(verb, parse_rows(spec, row_count))


def parse_rows(spec: str, row_count: int) -> tuple[int, ...]:
    """Row numbers of a spec like ``1-3, 7``, sorted and without repeats.

    Raises:
        CommandError: As :func:`parse_command`.
    """
    if row_count == 0:
        msg = "no rows are shown (clear the filter with f)"
        raise CommandError(msg)
    rows: set[int] = set()
    for raw in spec.split(","):
        item = raw.strip()
        m = _ITEM.match(item)
        if m is None:
            msg = f"{item or 'an empty item'!r} is not a row number or range (N or N-M)"
            raise CommandError(msg)
        first = int(m[1])
        last = int(m[2]) if m[2] is not None else first
        if first > last:
            msg = f"range {item!r} runs backwards; write {last}-{first}"
            raise CommandError(msg)
        if first < 1 or last > row_count:
            msg = f"row {first if first < 1 else last} is not shown; rows are 1-{row_count}"
            raise CommandError(msg)
        rows.update(range(first, last + 1))
    return tuple(sorted(rows))


__all__ = ["USAGE", "Command", "CommandError", "Verb", "parse_command", "parse_rows"]
