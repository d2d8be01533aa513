"""Finding copies of a closed list of names in the source: a tuple, list, set or dict literal that
names three or more of them outside the one table that owns them will drift from it."""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _named(node: ast.AST, names: Collection[str], *, row_ends: bool) -> set[str]:
    """The names a collection literal holds directly or, with ``row_ends``, as the first or last
    item of the tuples it holds (a table's rows)."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        items = list(node.elts)
    elif isinstance(node, ast.Dict) and row_ends:
        items = [k for k in node.keys if k is not None]
    else:
        return set()
    found = set()
    for item in items:
        ends = (
            item.elts[:1] + item.elts[-1:] if row_ends and isinstance(item, ast.Tuple) else [item]
        )
        found |= {e.value for e in ends if isinstance(e, ast.Constant) and e.value in names}
    return found


def copies(
    names: Collection[str],
    *,
    allowed: Collection[Path],
    sources: Collection[str],
    row_ends: bool = False,
) -> list[str]:
    """``path:line`` of every literal under ``sources`` (folders of the repository) that names
    three or more of ``names``, the files ``allowed`` (the owning table's) excepted."""
    found = []
    for top in sources:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative in allowed or ".venv" in relative.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if len(_named(node, names, row_ends=row_ends)) >= 3:
                    found.append(f"{relative}:{node.lineno}")
    return found
