"""The size argument urwid passes to ``keypress`` and ``render`` (box, flow or fixed)."""

from __future__ import annotations

from typing import TypeAlias

Size: TypeAlias = tuple[()] | tuple[int] | tuple[int, int]
