"""Splitting a line the user typed into words, as a POSIX shell would (no shell is run)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from srez_client.errors import UsageError


def split_words(text: str, what: str, *, example: str) -> list[str]:
    """``text`` split into words (quotes and backslashes as in a shell; nothing expanded).

    Args:
        text: The line.
        what: What the line is, for the error (``--agent-cmd``, ``the line``).
        example: A line that would do, shown when there is nothing to split.

    Raises:
        UsageError: When a quote is left open, or there are no words.
    """
    try:
        words = shlex.split(text)
    except ValueError as e:
        msg = f"{what} {text!r}: {e}"
        raise UsageError(msg) from None
    if not words:
        msg = f"{what} is empty; give the command, e.g. {example}"
        raise UsageError(msg)
    return words


def absolute_argv(argv: Sequence[str], cwd: Path) -> tuple[str, ...]:
    """``argv`` with each argument that names an existing file or folder relative to ``cwd``
    made absolute: the daemon starts the agent elsewhere (its sandbox's scratch folder, or the
    run folder), and a sandbox shows it the files its command names. A bare program name
    (``python3``, the first argument without a ``/``) is left to be looked up on ``PATH``, even
    when a file of that name is in ``cwd``; options (``-u``) are left as they are."""
    out = []
    for i, arg in enumerate(argv):
        path = Path(arg)
        named = "/" in arg or i > 0
        relative = arg and not arg.startswith("-") and not path.is_absolute()
        if named and relative and (cwd / path).exists():
            arg = str((cwd / path).resolve())
        out.append(arg)
    return tuple(out)
