"""Cheap facts about the machine the daemon runs on, checked once at start-up."""

from __future__ import annotations

import os


def terminal_available() -> bool:
    """Whether a pseudo-terminal can be opened here (``/api/pty`` offers a shell only then)."""
    try:
        leader, follower = os.openpty()
    except OSError:
        return False
    os.close(leader)
    os.close(follower)
    return True
