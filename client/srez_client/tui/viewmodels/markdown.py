"""Markdown, lightly: what an assistant wrote, as lines of styled segments.

Agents write Markdown; a terminal shows text. Rendering it fully (tables, nested lists, links)
would be a second parser to secure, so only what makes a reply readable is kept: headings,
bullets, numbered items, fenced code, ``inline code`` and ``**bold**``. Everything else is shown
as written. Input must already be sanitised (:func:`srez_client.sanitize.sanitize`): this module
only styles text, it never lets a control through because it never sees one.
"""

from __future__ import annotations

import re
from typing import Final, Literal

Style = Literal["text", "heading", "bold", "code", "bullet"]
Segment = tuple[Style, str]
Line = list[Segment]

_INLINE: Final = re.compile(r"(`[^`\n]+`|\*\*[^*\n]+\*\*)")
_HEADING: Final = re.compile(r"^(#{1,6})\s+(.*)$")
_BULLET: Final = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_NUMBERED: Final = re.compile(r"^(\s*)(\d{1,3}[.)])\s+(.*)$")


def inline(text: str) -> Line:
    """One line's ``code`` and ``**bold**`` spans as segments."""
    out: Line = []
    for part in _INLINE.split(text):
        if not part:
            continue
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(("code", part[1:-1]))
        elif part.startswith("**") and part.endswith("**") and len(part) > 4:
            out.append(("bold", part[2:-2]))
        else:
            out.append(("text", part))
    return out or [("text", "")]


def render(text: str) -> list[Line]:
    """``text`` as styled lines: one list of segments per output line."""
    lines: list[Line] = []
    fenced = False
    for raw in text.split("\n"):
        if raw.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            lines.append([("code", raw or " ")])
            continue
        if m := _HEADING.match(raw):
            lines.append([("heading", m[2])])
        elif m := _BULLET.match(raw):
            lines.append([("bullet", f"{m[1]}• "), *inline(m[2])])
        elif m := _NUMBERED.match(raw):
            lines.append([("bullet", f"{m[1]}{m[2]} "), *inline(m[3])])
        else:
            lines.append(inline(raw))
    return lines
