"""Splitting a line the user typed into words, as a POSIX shell would (no shell is run)."""

from __future__ import annotations

import shlex

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
