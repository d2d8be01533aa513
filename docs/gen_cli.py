"""Writes ``docs/cli.md``, the command-line reference, from ``srez``'s own argument parser.

Usage (``make cli-docs`` runs the first)::

    python docs/gen_cli.py           # (re)write docs/cli.md
    python docs/gen_cli.py --check   # exit 1 if docs/cli.md differs from a regeneration

Each command's section is its ``--help`` as argparse prints it at a fixed width, so the page says
exactly what the installed ``srez`` says; ``tests/test_cli_reference.py`` fails while the committed
page is stale.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "cli.md"
WIDTH = 100

HEADER = """\
# Command-line reference

Every command of `srez` with its options, as `srez COMMAND --help` prints them. This page is
generated from the parser by `docs/gen_cli.py` (`make cli-docs`); do not edit it by hand. How the
commands fit together is [evaluate.md](evaluate.md).
"""


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            # one entry per parser (aliases point at the same object)
            seen: dict[int, tuple[str, argparse.ArgumentParser]] = {}
            for name, sub in action.choices.items():
                seen.setdefault(id(sub), (name, sub))
            return list(seen.values())
    return []


def _walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for name, sub in _subcommands(parser):
        yield from _walk(sub, (*path, name))


def render() -> str:
    """The page's text, the same on every machine: help at a fixed width, one section each."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        from srez_client.cli.main import build_parser

        parts = [HEADER]
        for path, parser in _walk(build_parser(), ("srez",)):
            level = "#" * min(len(path) + 1, 4)
            parts.append(
                f"{level} `{' '.join(path)}`\n\n```text\n{parser.format_help().rstrip()}\n```\n"
            )
        return "\n".join(parts)
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def main(argv: list[str] | None = None) -> int:
    """Writes the page, or with ``--check`` reports whether it is stale."""
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = cli.parse_args(argv)
    text = render()
    if args.check:
        if PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is stale: run python docs/gen_cli.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
