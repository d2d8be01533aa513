"""Whether a host process exists, without depending on the backends (the mirror needs it too)."""

from __future__ import annotations

import os


def pid_exists(pid: int) -> bool:
    """Whether a process with this pid exists (signal 0; one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
