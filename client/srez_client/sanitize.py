"""Untrusted text made safe to show: one sanitiser for the terminal, one lossless escape for names.

Everything a run produces is untrusted (docs/security.md A8): dialog text, diffs, log lines, file
names, labels. Before it reaches a terminal, :func:`sanitize` shows every control that could move
the cursor, rewrite a line, change the title, write the clipboard or reorder text as a visible
escape: C0 controls except ``\\n`` and ``\\t`` (so ``\\r`` and ESC too, which disarms CSI, OSC, DCS
and APC sequences), DEL, C1 controls (single-byte CSI ``\\x9b`` included), the Unicode bidi and
isolate controls and the line and paragraph separators.

File names are bytes that may not be UTF-8. :func:`escape_bytes` writes them as printable text
that :func:`unescape_bytes` maps back exactly: ``\\\\`` for a backslash, ``\\xNN`` for a byte that
is not UTF-8, ``\\uNNNN`` for an unsafe character. Backslashes being escaped too makes the mapping
one to one.
"""

from __future__ import annotations

import re
from typing import Final

_UNSAFE: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\udc80-\udcff]"
)
_DISPLAY_KEEP: Final = frozenset("\n\t")
_NAME_UNSAFE: Final = re.compile(
    "[\\\\\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\udc80-\udcff]"
)
_NAME_ESCAPE: Final = re.compile(r"\\(?:\\|x([0-9a-f]{2})|u([0-9a-f]{4}))")


def _visible(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def sanitize(text: str) -> str:
    """``text`` with every unsafe control shown as a visible escape (``\\x1b``, ``\\u202e``).

    ``\\n`` and ``\\t`` are kept; everything else a terminal would act on is escaped.
    """
    return _UNSAFE.sub(lambda m: m[0] if m[0] in _DISPLAY_KEEP else _visible(m[0]), text)


def sanitize_line(text: str) -> str:
    """Like :func:`sanitize`, but ``\\n`` and ``\\t`` are escaped too (for one-line fields)."""
    return _UNSAFE.sub(lambda m: _visible(m[0]), text)


def escape_bytes(raw: bytes) -> str:
    """A name as printable text, reversibly (see the module docstring).

    Args:
        raw: The name's bytes (any bytes).

    Returns:
        Text without controls; :func:`unescape_bytes` gives ``raw`` back.
    """
    text = raw.decode("utf-8", "surrogateescape")

    def escape(m: re.Match[str]) -> str:
        char = m[0]
        if char == "\\":
            return "\\\\"
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            return f"\\x{code - 0xDC00:02x}"
        return f"\\u{code:04x}"

    return _NAME_UNSAFE.sub(escape, text)


def unescape_bytes(text: str) -> bytes:
    """The bytes :func:`escape_bytes` escaped.

    Raises:
        ValueError: If ``text`` holds a backslash that is not one of the escapes.
    """
    out = bytearray()
    pos = 0
    for m in _NAME_ESCAPE.finditer(text):
        if "\\" in text[pos : m.start()]:
            break
        out += text[pos : m.start()].encode("utf-8", "surrogateescape")
        if m[1] is not None:
            out.append(int(m[1], 16))
        elif m[2] is not None:
            out += chr(int(m[2], 16)).encode("utf-8")
        else:
            out += b"\\"
        pos = m.end()
    rest = text[pos:]
    if "\\" in rest:
        msg = f"invalid escape in {text!r}: a backslash must start \\\\, \\xNN or \\uNNNN"
        raise ValueError(msg)
    out += rest.encode("utf-8", "surrogateescape")
    return bytes(out)
