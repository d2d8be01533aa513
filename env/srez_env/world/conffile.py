"""The restricted-INI configuration files of the simulated services (docs/environment.md §3.2).

The format has ``[section]`` headers (names may contain dots, as in ``[upstream.payments]``),
``key = value`` lines, ``#`` comments and blank lines. A key is addressed as ``section.key`` and
split on the last dot. We do not use :mod:`configparser`: it drops comments and reorders, and the
run's diff must show every edit as a one-line hunk of the original file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from srez_env.errors import ConfError

Value = bool | int | str
"""A typed configuration value: ``true``/``false``, a decimal integer, or any other text."""

_SECTION = re.compile(r"^\[([A-Za-z0-9_.\-]+)\]\s*$")
_ASSIGN = re.compile(r"^([A-Za-z0-9_]+)\s*=\s*(.*?)\s*$")
_INT = re.compile(r"^-?\d+$")


def parse_value(raw: str) -> Value:
    """Types a value as the files write it: booleans, integers, else the text itself."""
    if raw in ("true", "false"):
        return raw == "true"
    if _INT.match(raw):
        return int(raw)
    return raw


def render_value(value: Value) -> str:
    """The canonical text of a value: ``true``/``false`` and integers without separators."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True, slots=True)
class ConfFile:
    """One configuration file: its exact text and the typed values it assigns.

    Instances are immutable; :meth:`with_value` returns a new file with one line replaced.
    """

    text: str
    values: dict[str, Value] = field(compare=False, repr=False)
    _line_of: dict[str, int] = field(compare=False, repr=False)

    @classmethod
    def parse(cls, text: str, *, name: str = "config") -> ConfFile:
        """Parses ``text``; raises :class:`ConfError` naming the line that does not parse."""
        values: dict[str, Value] = {}
        line_of: dict[str, int] = {}
        section: str | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            if match := _SECTION.match(stripped):
                section = match.group(1)
                continue
            match = _ASSIGN.match(stripped)
            if match is None or section is None:
                where = "a key outside any [section]" if match else f"{stripped[:40]!r}"
                msg = (
                    f"{name}:{number}: cannot parse {where}; expected '[section]' or 'key = value'"
                )
                raise ConfError(msg)
            key = f"{section}.{match.group(1)}"
            if key in values:
                msg = f"{name}:{number}: key {key!r} is assigned twice"
                raise ConfError(msg)
            values[key] = parse_value(match.group(2))
            line_of[key] = number - 1
        return cls(text, values, line_of)

    def get(self, key: str) -> Value:
        """The value of ``section.key``; raises KeyError when the file has no such key."""
        return self.values[key]

    def with_value(self, key: str, value: Value) -> ConfFile:
        """A copy with the line of ``key`` rewritten canonically; everything else is kept."""
        index = self._line_of[key]
        lines = self.text.splitlines(keepends=True)
        ending = "\n" if lines[index].endswith("\n") else ""
        lines[index] = f"{key.rsplit('.', 1)[1]} = {render_value(value)}{ending}"
        values = dict(self.values)
        values[key] = value
        return ConfFile("".join(lines), values, self._line_of)
