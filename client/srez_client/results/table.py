"""Plain-text tables for a terminal: aligned columns, and cells that cannot drive the terminal.

Light (no pydantic, no numpy): the listings that answer at once (``srez tasks list``) use it, and
:mod:`srez_client.results.report` re-exports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

_CONTROL = str.maketrans(
    {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}
    | {c: f"\\u{c:04x}" for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]}
)


def clean(text: str) -> str:
    """Escape control and bidi characters so that a cell cannot drive the terminal."""
    return text.translate(_CONTROL)


def render_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Iterable[int] = ()
) -> str:
    """Render rows as an aligned plain-text table with a rule under the header.

    Args:
        headers: Column titles.
        rows: Cells, as text; each row has one cell per header.
        right: Indexes of columns to right-align (numbers).

    Returns:
        The table, lines joined by ``\\n``, without a trailing newline.
    """
    cells = [[clean(c) for c in headers], *[[clean(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    right_set = set(right)

    def line(row: Sequence[str]) -> str:
        parts = [
            c.rjust(w) if i in right_set else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])
