"""Draws ``architecture.toml``, the project's layers, into ``docs/architecture.md``.

Usage (``make architecture-docs`` runs the first)::

    python docs/gen_architecture.py           # (re)write the layers section of the page
    python docs/gen_architecture.py --check   # exit 1 if the page differs from a regeneration

The section between the two markers of the page is a Mermaid graph of the layers (an arrow is a
``may_import``) and a table of their folders, both read from the file alone; the rest of the page
is written by hand. ``tests/test_architecture_doc.py`` fails while the drawing is stale, and
``tests/test_architecture.py`` holds the code to the file.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "architecture.toml"
PAGE = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- layers: drawn from architecture.toml by docs/gen_architecture.py; do not edit -->"
END = "<!-- end of the layers -->"


def _package_of(folder: str, packages: list[str]) -> str:
    return max((p for p in packages if folder == p or folder.startswith(p + "/")), key=len)


def _short(folder: str, package: str) -> str:
    """A folder as the table shows it: from its package's name on (``srez_env/sim/``)."""
    rel = Path(package).name + folder.removeprefix(package)
    return rel if rel.endswith(".py") else rel + "/"


def _node(name: str) -> str:
    return name.replace(".", "_")


def render_block(spec: dict[str, Any]) -> str:
    """The generated section: the graph, then one table row per layer, bottom up."""
    packages: list[str] = spec["packages"]
    layers: list[dict[str, Any]] = spec["layer"]
    groups: dict[str, list[dict[str, Any]]] = {}  # by the name's first part: env, daemon, ...
    for layer in layers:
        groups.setdefault(layer["name"].split(".")[0], []).append(layer)
    graph = ["```mermaid", "flowchart TD"]
    for group, members in groups.items():
        names = [Path(_package_of(f, packages)).name for m in members for f in m["folders"]]
        graph.append(f'    subgraph group_{group}["{", ".join(dict.fromkeys(names))}"]')
        graph.extend(f'        {_node(m["name"])}["{m["name"]}"]' for m in members)
        graph.append("    end")
    for layer in layers:
        graph.extend(f"    {_node(layer['name'])} --> {_node(t)}" for t in layer["may_import"])
    graph.append("```")
    table = ["| layer | folders | may import | what it holds |", "| --- | --- | --- | --- |"]
    for layer in layers:
        folders = ", ".join(f"`{_short(f, _package_of(f, packages))}`" for f in layer["folders"])
        may = ", ".join(f"`{t}`" for t in layer["may_import"]) or "nothing"
        table.append(f"| `{layer['name']}` | {folders} | {may} | {layer['about']} |")
    return "\n".join([BEGIN, "", *graph, "", *table, "", END])


def render(page: str | None = None) -> str:
    """The page with its layers section redrawn from the file."""
    text = PAGE.read_text(encoding="utf-8") if page is None else page
    start, end = text.index(BEGIN), text.index(END) + len(END)
    spec = tomllib.loads(SPEC.read_text(encoding="utf-8"))
    return text[:start] + render_block(spec) + text[end:]


def main(argv: list[str] | None = None) -> int:
    """Redraws the section, or with ``--check`` reports whether it is stale."""
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = cli.parse_args(argv)
    current = PAGE.read_text(encoding="utf-8")
    text = render(current)
    if args.check:
        if current != text:
            print(f"{PAGE} is stale: run python docs/gen_architecture.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
